// Models named by their path: a GGUF file or a Hugging Face folder.
#include <cstdlib>
#include <system_error>

#include "hostlm/serving.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;

fs::path expand_home(std::string_view name) {
  if (name == "~" || name.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    if (home && *home) return fs::path(home) / std::string(name.substr(name.size() > 1 ? 2 : 1));
  }
  return fs::path(std::string(name));
}

std::chrono::system_clock::time_point modified(const fs::path& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  if (ec) return {};
  return std::chrono::file_clock::to_sys(t);
}

}  // namespace

std::optional<ModelSpec> PathModelSource::find(std::string_view name) const {
  if (name.empty()) return std::nullopt;
  const fs::path path = expand_home(name);
  std::error_code ec;
  ModelSpec spec;
  if (fs::is_regular_file(path, ec)) {
    spec.size = fs::file_size(path, ec);
    spec.details = {{"format", "gguf"}};
  } else if (fs::is_directory(path, ec) && fs::is_regular_file(path / "config.json", ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file(ec)) spec.size += entry.file_size(ec);
    spec.details = {{"format", "safetensors"}};
  } else {
    return std::nullopt;
  }
  spec.name = std::string(name);
  spec.path = fs::absolute(path, ec);
  if (ec) spec.path = path;
  spec.modified_at = modified(path);
  spec.owned_by = "hostlm";
  return spec;
}

}  // namespace hostlm
