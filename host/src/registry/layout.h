// Where hostlm keeps plugins, both in a build tree and in an installed tree, so the search
// path and the library lookup agree on one picture of the two layouts.
#pragma once
#include <filesystem>
#include <optional>

namespace hostlm::registry {

// A build tree this libhostlm runs from. It is recognised by the marker file CMake writes at
// the top of every build tree (kBuildTreeMarker, never installed) one folder above
// libhostlm's own, so no build path is compiled into the library and an installed copy can
// never read the build tree it came from.
struct BuildTree {
  std::filesystem::path root;
  std::filesystem::path source_dir;  // the sources it was configured from; empty if unknown
  std::filesystem::path manifest_dir() const { return root / "manifests"; }
  std::filesystem::path plugin_dir() const { return root / "lib"; }
};
inline constexpr const char* kBuildTreeMarker = "hostlm-build-tree.json";

// The build tree whose <root>/lib or <root>/bin holds `module_dir`, if it is one.
std::optional<BuildTree> build_tree_for(const std::filesystem::path& module_dir);

// The build tree this libhostlm runs from, if it does.
std::optional<BuildTree> build_tree();

// Relative to the install prefix, as GNUInstallDirs chose them (absolute if the builder
// asked for absolute install dirs).
std::filesystem::path install_manifest_subdir();
std::filesystem::path install_plugin_subdir();
std::filesystem::path install_library_subdir();  // where libhostlm.so itself goes

// `path` without its trailing `suffix` components, or nothing if it does not end with them.
std::optional<std::filesystem::path> strip_suffix(const std::filesystem::path& path,
                                                  const std::filesystem::path& suffix);

// The prefix of an installed tree whose libhostlm.so sits in `library_dir`, or nothing if
// that folder is not where an install would put it.
std::optional<std::filesystem::path> install_prefix_for(const std::filesystem::path& library_dir);

// The folder of the module (libhostlm.so) this code runs in.
std::filesystem::path this_library_dir();

// True when this libhostlm runs from a build tree. An installed host must not also read the
// build tree's manifests: both copies would claim the same architectures.
bool running_from_build_tree();

}  // namespace hostlm::registry
