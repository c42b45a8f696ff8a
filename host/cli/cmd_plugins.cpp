// `hostlm plugins`: what the registry found, so a user can see why an architecture is or
// is not available without loading anything.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "hostlm/registry.h"

namespace hostlm::cli {
namespace {

std::string comma_list(const std::vector<std::string>& items) {
  if (items.empty()) return "-";
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool library_exists(const PluginManifest& m) {
  std::error_code ec;
  return std::filesystem::is_regular_file(m.library, ec);
}

void print_text(const PluginRegistry& registry, const std::vector<std::filesystem::path>& path) {
  if (registry.manifests().empty()) {
    std::string searched;
    for (const auto& dir : path) searched += (searched.empty() ? "" : ", ") + dir.string();
    std::fprintf(stderr, "no plugins found (searched: %s; add folders with $HOSTLM_PLUGIN_PATH)\n",
                 searched.empty() ? "no existing folder" : searched.c_str());
  }
  for (const PluginManifest& m : registry.manifests()) {
    std::cout << m.name << ' ' << m.version;
    if (!m.description.empty()) std::cout << "  " << m.description;
    std::cout << "\n  manifest: " << m.manifest_path.string()
              << "\n  library:  " << m.library.string() << (library_exists(m) ? "" : " (missing)")
              << "\n  gguf:     " << comma_list(m.gguf_architectures)
              << "\n  hf:       " << comma_list(m.hf_architectures) << '\n';
  }
  std::cout.flush();
  for (const std::string& problem : registry.problems())
    std::fprintf(stderr, "problem: %s\n", problem.c_str());
}

void print_json(const PluginRegistry& registry, const std::vector<std::filesystem::path>& path) {
  nlohmann::ordered_json out;
  out["search_path"] = nlohmann::ordered_json::array();
  for (const auto& dir : path) out["search_path"].push_back(dir.string());
  out["plugins"] = nlohmann::ordered_json::array();
  for (const PluginManifest& m : registry.manifests())
    out["plugins"].push_back(
        {{"name", m.name},
         {"version", m.version},
         {"description", m.description},
         {"abi_version", m.abi_version},
         {"manifest", m.manifest_path.string()},
         {"library", m.library.string()},
         {"architectures", {{"gguf", m.gguf_architectures}, {"hf", m.hf_architectures}}}});
  out["problems"] = registry.problems();
  std::cout << out.dump(2) << std::endl;
}

}  // namespace

void add_plugins_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plugins", "List the architecture plugins found, what they claim, and manifest problems");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the list as JSON (problems included) on stdout");
  cmd->callback([json] {
    const std::vector<std::filesystem::path> path = PluginRegistry::default_search_path();
    const PluginRegistry registry(path);
    if (*json)
      print_json(registry, path);
    else
      print_text(registry, path);
  });
}

}  // namespace hostlm::cli
