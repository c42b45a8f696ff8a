// LM Studio's model folder as a read-only model source.
#include <algorithm>
#include <cstdlib>

#include "hostlm/openai/api.h"

namespace hostlm::openai {
namespace {

namespace fs = std::filesystem;

bool is_model_file(const fs::path& p) {
  const std::string name = p.filename().string();
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.ends_with(".gguf") && !lower.starts_with("mmproj");
}

// The model files of a repo folder, sorted.
std::vector<fs::path> model_files(const fs::path& repo) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(repo, ec))
    if (entry.is_regular_file(ec) && is_model_file(entry.path())) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

class LmStudioSource final : public ModelSource {
 public:
  explicit LmStudioSource(fs::path root) : root_(std::move(root)) {}

  std::optional<ModelSpec> find(std::string_view name) const override {
    const fs::path rel(std::string{name});
    // "publisher/repo" or "publisher/repo/file.gguf", nothing that climbs out of the root.
    std::vector<std::string> parts;
    for (const auto& part : rel) parts.push_back(part.string());
    if (parts.size() < 2 || parts.size() > 3 || rel.is_absolute()) return std::nullopt;
    for (const std::string& p : parts)
      if (p.empty() || p == "." || p == "..") return std::nullopt;
    std::error_code ec;
    if (parts.size() == 3) {
      const fs::path file = root_ / rel;
      if (!fs::is_regular_file(file, ec) || !is_model_file(file)) return std::nullopt;
      return spec(std::string(name), file, parts[0]);
    }
    const auto files = model_files(root_ / rel);
    if (files.empty()) return std::nullopt;
    return spec(std::string(name), files.front(), parts[0]);
  }

  std::vector<ModelSpec> list() const override {
    std::vector<ModelSpec> out;
    std::error_code ec;
    for (const auto& publisher : fs::directory_iterator(root_, ec)) {
      if (!publisher.is_directory(ec)) continue;
      for (const auto& repo : fs::directory_iterator(publisher.path(), ec)) {
        if (!repo.is_directory(ec)) continue;
        const auto files = model_files(repo.path());
        const std::string key =
            publisher.path().filename().string() + "/" + repo.path().filename().string();
        for (const fs::path& f : files)
          out.push_back(spec(files.size() == 1 ? key : key + "/" + f.filename().string(), f,
                             publisher.path().filename().string()));
      }
    }
    return out;
  }

 private:
  static ModelSpec spec(std::string name, const fs::path& file, const std::string& publisher) {
    ModelSpec s;
    s.name = std::move(name);
    s.path = file;
    std::error_code ec;
    s.size = fs::file_size(file, ec);
    const auto t = fs::last_write_time(file, ec);
    if (!ec) s.modified_at = std::chrono::file_clock::to_sys(t);
    s.owned_by = publisher;
    s.details = {{"format", "gguf"}};
    return s;
  }

  fs::path root_;
};

}  // namespace

std::shared_ptr<const ModelSource> lmstudio_model_source(fs::path root) {
  return std::make_shared<LmStudioSource>(std::move(root));
}

fs::path default_lmstudio_root() {
  if (const char* env = std::getenv("HOSTLM_LMSTUDIO_MODELS"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/") / ".lmstudio" / "models";
}

}  // namespace hostlm::openai
