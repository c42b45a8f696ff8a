#include "registry/manifest_discovery.h"

#include <algorithm>
#include <set>

namespace fs = std::filesystem;

namespace hostlm::registry {
namespace {

bool looks_like_manifest(const fs::directory_entry& entry) {
  std::error_code ec;
  const fs::path& p = entry.path();
  // Dot files are editor backups and the like, not manifests someone meant to install.
  return p.extension() == ".json" && p.filename().string().front() != '.' &&
         entry.is_regular_file(ec);
}

// The folder's manifests sorted by name, so the registry is the same on every run.
std::vector<fs::path> manifests_in(const fs::path& dir, std::vector<std::string>& problems) {
  std::vector<fs::path> found;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec))
    if (looks_like_manifest(*it)) found.push_back(it->path());
  if (ec) problems.push_back("cannot list plugin folder " + dir.string() + ": " + ec.message());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

ManifestFiles find_manifest_files(const std::vector<fs::path>& search_path) {
  ManifestFiles out;
  std::set<fs::path> seen;
  for (const fs::path& folder : search_path) {
    for (const fs::path& dir : {folder, folder / "manifests"}) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      for (const fs::path& file : manifests_in(dir, out.problems)) {
        // The same file reached through two entries (a symlink, the build tree also named
        // in $HOSTLM_PLUGIN_PATH) is one plugin, not two plugins in conflict.
        fs::path canonical = fs::canonical(file, ec);
        if (ec) canonical = fs::absolute(file, ec).lexically_normal();
        if (seen.insert(canonical).second) out.files.push_back(canonical);
      }
    }
  }
  return out;
}

}  // namespace hostlm::registry
