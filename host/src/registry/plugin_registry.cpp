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

namespace {

// What one scan of the search path found.
struct Catalog {
  std::vector<fs::path> search_path;
  std::vector<PluginManifest> manifests;
  std::vector<registry::LibraryLookup> libraries;  // one per manifest
  std::vector<std::string> problems;
  // Architecture -> indices into manifests; more than one index is a conflict.
  std::map<std::string, std::vector<size_t>> claims;

  static Catalog scan(std::vector<fs::path> search_path);
  void add_manifest(PluginManifest manifest);
  void record_conflicts();
  std::string claimants(const std::vector<size_t>& indices) const;
  std::string unknown_architecture(const std::string& architecture) const;
};

Catalog Catalog::scan(std::vector<fs::path> search_path) {
  Catalog c;
  c.search_path = std::move(search_path);
  registry::ManifestFiles found = registry::find_manifest_files(c.search_path);
  c.problems = std::move(found.problems);
  for (const fs::path& file : found.files) {
    try {
      c.add_manifest(registry::parse_manifest_file(file));
    } catch (const Error& e) {
      c.problems.push_back(e.what());
    }
  }
  c.record_conflicts();
  return c;
}

void Catalog::add_manifest(PluginManifest m) {
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
}

std::string Catalog::claimants(const std::vector<size_t>& indices) const {
  std::string out;
  for (size_t i : indices) out += (out.empty() ? "" : " and ") + registry::describe(manifests[i]);
  return out;
}

void Catalog::record_conflicts() {
  for (const auto& [arch, owners] : claims)
    if (owners.size() > 1)
      problems.push_back("architecture '" + arch + "' is claimed by " + claimants(owners) +
                         "; no plugin is used for it until only one manifest claims it");
}

std::string Catalog::unknown_architecture(const std::string& architecture) const {
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

}  // namespace

struct PluginRegistry::Impl {
  std::mutex mutex;  // guards both members; plugin_for runs under it, loads included
  Catalog catalog;
  // Every library loaded so far, by file, across rescans: models made by a plugin run its
  // code, so none is unloaded before the registry goes.
  std::map<fs::path, std::unique_ptr<registry::LoadedPlugin>> loaded;
};

PluginRegistry::PluginRegistry(std::vector<fs::path> search_path)
    : impl_(std::make_unique<Impl>()) {
  impl_->catalog = Catalog::scan(std::move(search_path));
}

PluginRegistry::PluginRegistry() : PluginRegistry(default_search_path()) {}

PluginRegistry::~PluginRegistry() = default;

const std::vector<PluginManifest>& PluginRegistry::manifests() const {
  return impl_->catalog.manifests;
}

const std::vector<std::string>& PluginRegistry::problems() const { return impl_->catalog.problems; }

const std::vector<fs::path>& PluginRegistry::search_path() const {
  return impl_->catalog.search_path;
}

void PluginRegistry::rescan(std::vector<fs::path> search_path) {
  Catalog fresh = Catalog::scan(std::move(search_path));  // file reads outside the lock
  std::lock_guard lock(impl_->mutex);
  std::swap(impl_->catalog, fresh);
}

ArchitecturePlugin& PluginRegistry::plugin_for(const std::string& architecture) {
  std::lock_guard lock(impl_->mutex);
  const Catalog& c = impl_->catalog;
  auto claim = c.claims.find(architecture);
  if (claim == c.claims.end()) throw Error(c.unknown_architecture(architecture));
  if (claim->second.size() > 1)
    throw Error("architecture '" + architecture + "' is claimed by more than one plugin: " +
                c.claimants(claim->second) + "; remove or fix one of the manifests");

  const size_t index = claim->second.front();
  const PluginManifest& manifest = c.manifests[index];
  std::unique_ptr<registry::LoadedPlugin>& slot = impl_->loaded[manifest.library];
  if (!slot) {
    // The manifest's word is enough to refuse: no need to map a library built for
    // another ABI into the process.
    if (manifest.abi_version != HOSTLM_PLUGIN_ABI_VERSION) throw Error(abi_mismatch(manifest));
    const registry::LibraryLookup& lookup = c.libraries[index];
    if (!lookup.found) throw Error(missing_library(manifest, lookup));
    slot = std::make_unique<registry::LoadedPlugin>(manifest);
  }
  return slot->plugin();
}

}  // namespace hostlm
