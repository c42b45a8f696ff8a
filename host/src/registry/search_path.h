// The folders searched for plugin manifests when the caller does not choose them.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace hostlm::registry {

// The entries of a colon-separated list such as $HOSTLM_PLUGIN_PATH, empty ones dropped.
std::vector<std::filesystem::path> split_path_list(const std::string& list);

// $XDG_DATA_HOME/hostlm/plugins, falling back to ~/.local/share/hostlm/plugins.
std::optional<std::filesystem::path> user_plugin_dir();

// The manifest folder of the installed tree this libhostlm belongs to, if it is installed.
std::optional<std::filesystem::path> installed_manifest_dir();

// Existing folders only, each once (by canonical path), first occurrence kept.
std::vector<std::filesystem::path> existing_unique_dirs(
    const std::vector<std::filesystem::path>& dirs);

}  // namespace hostlm::registry
