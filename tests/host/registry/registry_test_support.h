// Shared by the registry tests: where the build and the fixtures are, scratch folders laid
// out like plugin folders, and environment variables set for one test only.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/registry.h"

namespace hostlm::test {

namespace fs = std::filesystem;

// ctest passes HOSTLM_BUILD_DIR; a test binary run by hand sits in <build>/bin.
inline fs::path build_dir() {
  if (const char* dir = std::getenv("HOSTLM_BUILD_DIR")) return fs::path(dir);
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path();
}

inline fs::path fixtures_dir() {
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"))
    return fs::path(src) / "tests" / "host" / "registry" / "fixtures";
  return fs::path(__FILE__).parent_path() / "fixtures";
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hostlm-registry-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = fs::canonical(pattern);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// A scratch folder laid out like the build tree: <root>/manifests holds copies of the
// named fixture manifests and <root>/lib is a link to the build's libraries, so bare
// library names in the fixtures resolve the way they do for real plugins.
class PluginFolder {
 public:
  explicit PluginFolder(const std::vector<std::string>& fixtures) {
    fs::create_directories(manifests());
    for (const std::string& fixture : fixtures) add(fixture);
    fs::create_directory_symlink(build_dir() / "lib", root() / "lib");
  }
  void add(const std::string& fixture) {
    fs::path source = fixtures_dir() / fixture;
    fs::copy_file(source, manifests() / source.filename());
  }
  const fs::path& root() const { return dir_.path(); }
  fs::path manifests() const { return root() / "manifests"; }
  fs::path manifest(const std::string& file) const { return manifests() / file; }

 private:
  TempDir dir_;
};

// Sets (or, given nothing, unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::string all_problems(const PluginRegistry& registry) {
  std::string out;
  for (const std::string& p : registry.problems()) out += p + "\n";
  return out;
}

inline const PluginManifest* find_manifest(const PluginRegistry& registry,
                                           const std::string& name) {
  for (const PluginManifest& m : registry.manifests())
    if (m.name == name) return &m;
  return nullptr;
}

// The message of the hostlm::Error that plugin_for throws, or a note that it did not.
inline std::string plugin_for_error(PluginRegistry& registry, const std::string& architecture) {
  try {
    registry.plugin_for(architecture);
  } catch (const Error& e) {
    return e.what();
  }
  return "(plugin_for('" + architecture + "') did not throw)";
}

}  // namespace hostlm::test
