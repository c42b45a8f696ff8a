#define BOOST_DLL_USE_STD_FS
#include "registry/layout.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <vector>

namespace fs = std::filesystem;

namespace hostlm::registry {

fs::path build_manifest_dir() { return fs::path(HOSTLM_BUILD_MANIFEST_DIR); }
fs::path build_plugin_dir() { return fs::path(HOSTLM_BUILD_PLUGIN_DIR); }
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

bool running_from_build_tree() {
  fs::path here = this_library_dir();
  if (here.empty()) return false;
  std::error_code ec;
  // libhostlm.so in <build>/lib, or room objects linked into an executable in <build>/bin.
  // An exact match rather than "somewhere under <build>" keeps an install into a folder
  // inside the build tree counted as installed.
  return fs::equivalent(here, build_plugin_dir(), ec) ||
         fs::equivalent(here, build_manifest_dir().parent_path() / "bin", ec);
}

}  // namespace hostlm::registry
