#include "registry/library_locator.h"

#include <algorithm>

#include "registry/layout.h"

namespace fs = std::filesystem;

namespace hostlm::registry {

std::vector<fs::path> library_dirs_for(const fs::path& manifest_dir) {
  std::vector<fs::path> dirs{manifest_dir};
  if (auto prefix = strip_suffix(manifest_dir, install_manifest_subdir())) {
    dirs.push_back(*prefix / install_plugin_subdir());
  } else if (manifest_dir.filename() == "manifests") {
    dirs.push_back(manifest_dir.parent_path() / "lib");
    dirs.push_back(manifest_dir.parent_path());
  }
  std::error_code ec;
  if (auto tree = build_tree(); tree && fs::equivalent(manifest_dir, tree->manifest_dir(), ec))
    dirs.push_back(tree->plugin_dir());

  std::vector<fs::path> unique;
  for (const fs::path& dir : dirs) {
    fs::path normal = dir.lexically_normal();
    if (std::find(unique.begin(), unique.end(), normal) == unique.end()) unique.push_back(normal);
  }
  return unique;
}

LibraryLookup locate_library(const fs::path& manifest_dir, const fs::path& library) {
  LibraryLookup lookup;
  if (library.is_absolute()) {
    lookup.tried.push_back(library.lexically_normal());
  } else {
    for (const fs::path& dir : library_dirs_for(manifest_dir))
      lookup.tried.push_back((dir / library).lexically_normal());
  }
  for (const fs::path& candidate : lookup.tried) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      lookup.path = candidate;
      lookup.found = true;
      return lookup;
    }
  }
  lookup.path = lookup.tried.front();
  return lookup;
}

}  // namespace hostlm::registry
