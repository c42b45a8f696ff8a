// Where hostlm keeps plugins, both in a build tree and in an installed tree, so the search
// path and the library lookup agree on one picture of the two layouts.
#pragma once
#include <filesystem>
#include <optional>

namespace hostlm::registry {

// The build tree this libhostlm was compiled in (may no longer exist).
std::filesystem::path build_manifest_dir();
std::filesystem::path build_plugin_dir();

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

// True when this libhostlm runs from the build tree it was built in. An installed host must
// not also read the build tree's manifests: both copies would claim the same architectures.
bool running_from_build_tree();

}  // namespace hostlm::registry
