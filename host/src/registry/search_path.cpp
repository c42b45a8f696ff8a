#include "registry/search_path.h"

#include <cstdlib>
#include <set>

#include "hostlm/registry.h"
#include "registry/layout.h"

namespace fs = std::filesystem;

namespace hostlm::registry {

std::vector<fs::path> split_path_list(const std::string& list) {
  std::vector<fs::path> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::optional<fs::path> user_plugin_dir() {
  // XDG says a relative $XDG_DATA_HOME is invalid and must be ignored.
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "hostlm" / "plugins";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local" / "share" / "hostlm" / "plugins";
  return std::nullopt;
}

std::optional<fs::path> installed_manifest_dir() {
  fs::path here = this_library_dir();
  if (here.empty()) return std::nullopt;
  std::optional<fs::path> prefix = install_prefix_for(here);
  if (!prefix) return std::nullopt;
  return *prefix / install_manifest_subdir();
}

std::vector<fs::path> existing_unique_dirs(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    fs::path canonical = fs::canonical(dir, ec);
    if (ec) continue;
    if (seen.insert(canonical).second) out.push_back(canonical);
  }
  return out;
}

}  // namespace hostlm::registry

namespace hostlm {

std::vector<fs::path> PluginRegistry::default_search_path() {
  const char* env = std::getenv("HOSTLM_PLUGIN_PATH");
  return default_search_path(env ? env : "");
}

std::vector<fs::path> PluginRegistry::default_search_path(const std::string& plugin_path) {
  std::vector<fs::path> dirs;
  if (auto tree = registry::build_tree()) dirs.push_back(tree->manifest_dir());
  if (auto installed = registry::installed_manifest_dir()) dirs.push_back(*installed);
  for (fs::path& dir : registry::split_path_list(plugin_path)) dirs.push_back(std::move(dir));
  if (auto user = registry::user_plugin_dir()) dirs.push_back(*user);
  return registry::existing_unique_dirs(dirs);
}

}  // namespace hostlm
