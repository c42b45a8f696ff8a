// Shared pieces of the store tests: scratch folders, small GGUF files, file helpers.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hostlm/gguf.h"

namespace hostlm::ollama::testing {

namespace fs = std::filesystem;

inline fs::path source_dir() {
  const char* v = std::getenv("HOSTLM_SOURCE_DIR");
  return v ? fs::path(v) : fs::path(HOSTLM_TEST_SOURCE_DIR);
}

inline fs::path tiny_model() {
  return source_dir() / "tests" / "data" / "models" / "tiny-tied-f32";
}

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("hostlm-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void spit(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A small valid GGUF of a "qwen35" model whose one tensor holds `n` floats of `seed`.
inline void write_gguf(const fs::path& path, size_t n = 1000, float seed = 1.0f) {
  static std::vector<std::vector<float>> keep;  // the writer references tensor data
  keep.emplace_back(n, seed);
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("qwen35"));
  w.set("general.file_type", GgufValue::u32(0));
  w.set("qwen35.block_count", GgufValue::u32(1));
  w.add_tensor("token_embd.weight", DType::F32, {n}, keep.back().data(), n * sizeof(float));
  fs::create_directories(path.parent_path());
  w.write(path);
}

inline std::string sha256_of(const fs::path& p) {
  const std::string cmd = "sha256sum '" + p.string() + "'";
  FILE* f = ::popen(cmd.c_str(), "r");
  char buf[128] = {};
  const size_t n = std::fread(buf, 1, 64, f);
  ::pclose(f);
  return std::string(buf, n);
}

// Files in the blobs folder (temporary ones included).
inline std::vector<std::string> blob_names(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "blobs", ec))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hostlm::ollama::testing
