#define BOOST_DLL_USE_STD_FS
#include "registry/layout.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace fs = std::filesystem;

namespace hostlm::registry {

fs::path install_manifest_subdir() { return fs::path(HOSTLM_INSTALL_MANIFEST_SUBDIR); }
fs::path install_plugin_subdir() { return fs::path(HOSTLM_INSTALL_PLUGIN_SUBDIR); }

fs::path install_library_subdir() {
  // The top-level CMakeLists puts plugins in <libdir>/hostlm/plugins; no separate define
  // exists for <libdir>, so it is recovered from the plugin folder.
  fs::path plugins = install_plugin_subdir();
  return strip_suffix(plugins, fs::path("hostlm") / "plugins").value_or(plugins.parent_path());
}

std::optional<fs::path> strip_suffix(const fs::path& path, const fs::path& suffix) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "a/b/" ends in an empty component
  fs::path s = suffix.lexically_normal();
  if (!s.has_filename()) s = s.parent_path();
  std::vector<fs::path> pc(p.begin(), p.end());
  std::vector<fs::path> sc(s.begin(), s.end());
  if (sc.empty() || sc.size() > pc.size()) return std::nullopt;
  if (!std::equal(sc.rbegin(), sc.rend(), pc.rbegin())) return std::nullopt;
  fs::path rest;
  for (auto it = pc.begin(); it != pc.end() - static_cast<std::ptrdiff_t>(sc.size()); ++it)
    rest /= *it;
  return rest;
}

std::optional<fs::path> install_prefix_for(const fs::path& library_dir) {
  fs::path libdir = install_library_subdir();
  if (libdir.is_absolute()) {
    std::error_code ec;
    if (fs::equivalent(library_dir, libdir, ec)) return fs::path("/");
    return std::nullopt;
  }
  return strip_suffix(library_dir, libdir);
}

fs::path this_library_dir() {
  std::error_code ec;
  fs::path self = boost::dll::this_line_location(ec);
  if (ec) return {};
  return self.parent_path();
}

std::optional<BuildTree> build_tree_for(const fs::path& module_dir) {
  // libhostlm.so sits in <build>/lib; room objects linked into an executable sit in
  // <build>/bin. Only those two exact places count, so an install into a folder inside the
  // build tree is still an install.
  const fs::path dir = module_dir.lexically_normal();
  const fs::path name = dir.has_filename() ? dir.filename() : dir.parent_path().filename();
  if (name != "lib" && name != "bin") return std::nullopt;
  BuildTree tree;
  tree.root = (dir.has_filename() ? dir : dir.parent_path()).parent_path();
  const fs::path marker = tree.root / kBuildTreeMarker;
  std::error_code ec;
  if (!fs::is_regular_file(marker, ec)) return std::nullopt;
  // The marker is CMake's own file; an unreadable one still marks the tree, without sources.
  std::ifstream in(marker);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("source_dir") && doc["source_dir"].is_string())
    tree.source_dir = doc["source_dir"].get<std::string>();
  return tree;
}

std::optional<BuildTree> build_tree() {
  static const std::optional<BuildTree> tree = [] {
    const fs::path here = this_library_dir();
    return here.empty() ? std::nullopt : build_tree_for(here);
  }();
  return tree;
}

bool running_from_build_tree() { return build_tree().has_value(); }

}  // namespace hostlm::registry
