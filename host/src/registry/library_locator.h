// Finds the library a manifest names. Manifests and libraries live in different folders
// (build tree: <build>/manifests and <build>/lib; installed: <prefix>/share/hostlm/manifests
// and <prefix>/lib/hostlm/plugins), so a relative "library" is looked up in the folders a
// manifest's own folder pairs with, in a fixed order.
#pragma once
#include <filesystem>
#include <vector>

namespace hostlm::registry {

struct LibraryLookup {
  std::filesystem::path path;  // the first candidate that exists, else the first
  bool found = false;
  std::vector<std::filesystem::path> tried;  // every candidate, in order
};

// The folders a relative library path is tried against, for a manifest in `manifest_dir`:
// the manifest's folder; then for an installed manifest folder, the install's plugin folder,
// or for any other ".../manifests" folder, its sibling lib/ and its parent; and for the
// build tree's manifest folder, the build tree's library folder.
std::vector<std::filesystem::path> library_dirs_for(const std::filesystem::path& manifest_dir);

LibraryLookup locate_library(const std::filesystem::path& manifest_dir,
                             const std::filesystem::path& library);

}  // namespace hostlm::registry
