#include <algorithm>
#include <map>
#include <mutex>

#include "hostlm/error.h"
#include "hostlm/registry.h"
#include "registry/library_locator.h"
#include "registry/loaded_plugin.h"
#include "registry/manifest_discovery.h"
#include "registry/manifest_parser.h"

namespace fs = std::filesystem;

namespace hostlm {
namespace {

std::string joined(const std::vector<fs::path>& paths) {
  std::string out;
  for (const fs::path& p : paths) out += (out.empty() ? "" : ", ") + p.string();
  return out;
}

std::string missing_library(const PluginManifest& m, const registry::LibraryLookup& lookup) {
  return registry::describe(m) + ": library file not found (tried " + joined(lookup.tried) + ")";
}

std::string abi_mismatch(const PluginManifest& m) {
  return registry::describe(m) + ": declares plugin ABI " + std::to_string(m.abi_version) +
         " but this host uses plugin ABI " + std::to_string(HOSTLM_PLUGIN_ABI_VERSION) +
         "; rebuild the plugin";
}

}  // namespace

struct PluginRegistry::Impl {
  std::vector<fs::path> search_path;
  std::vector<PluginManifest> manifests;
  std::vector<registry::LibraryLookup> libraries;  // one per manifest
  std::vector<std::string> problems;
  // Architecture -> indices into manifests; more than one index is a conflict.
  std::map<std::string, std::vector<size_t>> claims;
  std::mutex load_mutex;
  std::vector<std::unique_ptr<registry::LoadedPlugin>> loaded;  // one per manifest, lazily

  void add_manifest(PluginManifest manifest);
  void record_conflicts();
  std::string claimants(const std::vector<size_t>& indices) const;
  std::string unknown_architecture(const std::string& architecture) const;
};

void PluginRegistry::Impl::add_manifest(PluginManifest m) {
  registry::LibraryLookup lookup =
      registry::locate_library(m.manifest_path.parent_path(), m.library);
  m.library = lookup.path;
  if (!lookup.found) problems.push_back(missing_library(m, lookup));
  if (m.abi_version != HOSTLM_PLUGIN_ABI_VERSION) problems.push_back(abi_mismatch(m));
  const size_t index = manifests.size();
  for (const auto* list : {&m.gguf_architectures, &m.hf_architectures})
    for (const std::string& arch : *list) {
      std::vector<size_t>& owners = claims[arch];
      if (std::find(owners.begin(), owners.end(), index) == owners.end()) owners.push_back(index);
    }
  manifests.push_back(std::move(m));
  libraries.push_back(std::move(lookup));
  loaded.emplace_back();
}

std::string PluginRegistry::Impl::claimants(const std::vector<size_t>& indices) const {
  std::string out;
  for (size_t i : indices) out += (out.empty() ? "" : " and ") + registry::describe(manifests[i]);
  return out;
}

void PluginRegistry::Impl::record_conflicts() {
  for (const auto& [arch, owners] : claims)
    if (owners.size() > 1)
      problems.push_back("architecture '" + arch + "' is claimed by " + claimants(owners) +
                         "; no plugin is used for it until only one manifest claims it");
}

std::string PluginRegistry::Impl::unknown_architecture(const std::string& architecture) const {
  std::string msg = "no plugin claims architecture '" + architecture + "'; known: ";
  if (claims.empty()) {
    std::string searched = joined(search_path);
    msg += "none (searched: " + (searched.empty() ? "no existing folder" : searched) +
           "; add folders with $HOSTLM_PLUGIN_PATH)";
  } else {
    std::string known;
    for (const auto& [arch, owners] : claims) known += (known.empty() ? "" : ", ") + arch;
    msg += known;
  }
  if (!problems.empty())
    msg += " (" + std::to_string(problems.size()) +
           " plugin problem(s) found; `hostlm plugins` lists them)";
  return msg;
}

PluginRegistry::PluginRegistry(std::vector<fs::path> search_path)
    : impl_(std::make_unique<Impl>()) {
  impl_->search_path = std::move(search_path);
  registry::ManifestFiles found = registry::find_manifest_files(impl_->search_path);
  impl_->problems = std::move(found.problems);
  for (const fs::path& file : found.files) {
    try {
      impl_->add_manifest(registry::parse_manifest_file(file));
    } catch (const Error& e) {
      impl_->problems.push_back(e.what());
    }
  }
  impl_->record_conflicts();
}

PluginRegistry::PluginRegistry() : PluginRegistry(default_search_path()) {}

PluginRegistry::~PluginRegistry() = default;

const std::vector<PluginManifest>& PluginRegistry::manifests() const { return impl_->manifests; }

const std::vector<std::string>& PluginRegistry::problems() const { return impl_->problems; }

ArchitecturePlugin& PluginRegistry::plugin_for(const std::string& architecture) {
  auto claim = impl_->claims.find(architecture);
  if (claim == impl_->claims.end()) throw Error(impl_->unknown_architecture(architecture));
  if (claim->second.size() > 1)
    throw Error("architecture '" + architecture + "' is claimed by more than one plugin: " +
                impl_->claimants(claim->second) + "; remove or fix one of the manifests");

  const size_t index = claim->second.front();
  const PluginManifest& manifest = impl_->manifests[index];
  std::lock_guard lock(impl_->load_mutex);
  if (!impl_->loaded[index]) {
    // The manifest's word is enough to refuse: no need to map a library built for
    // another ABI into the process.
    if (manifest.abi_version != HOSTLM_PLUGIN_ABI_VERSION) throw Error(abi_mismatch(manifest));
    const registry::LibraryLookup& lookup = impl_->libraries[index];
    if (!lookup.found) throw Error(missing_library(manifest, lookup));
    impl_->loaded[index] = std::make_unique<registry::LoadedPlugin>(manifest);
  }
  return impl_->loaded[index]->plugin();
}

}  // namespace hostlm
