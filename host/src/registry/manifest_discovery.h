// Lists the manifest files of a search path: each folder's *.json files and those of its
// manifests/ subfolder, every file once even when folders overlap or repeat.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace hostlm::registry {

struct ManifestFiles {
  std::vector<std::filesystem::path> files;  // canonical, in search-path order
  std::vector<std::string> problems;         // folders that exist but cannot be listed
};

ManifestFiles find_manifest_files(const std::vector<std::filesystem::path>& search_path);

}  // namespace hostlm::registry
