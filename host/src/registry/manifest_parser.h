// Reads one plugin manifest and checks every field, so that a bad manifest is reported by
// file and field when the registry starts rather than as a puzzling failure at load time.
#pragma once
#include <filesystem>
#include <string>

#include "hostlm/registry.h"

namespace hostlm::registry {

// Throws hostlm::Error naming `file` and the field at fault. In the result, `library` is
// the field as written (resolve it with locate_library) and `manifest_path` is `file`.
PluginManifest parse_manifest_file(const std::filesystem::path& file);

// The same checks on text already read; `file` only names the source in messages.
PluginManifest parse_manifest_text(const std::string& text, const std::filesystem::path& file);

}  // namespace hostlm::registry
