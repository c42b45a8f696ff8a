// Helpers shared by the safetensors tests: locating test data, scratch folders, and writing
// safetensors files byte by byte so malformed ones can be made on purpose.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/tensor_view.h"

namespace hostlm::st_test {

namespace fs = std::filesystem;

inline fs::path source_dir() {
  if (const char* env = std::getenv("HOSTLM_SOURCE_DIR"); env != nullptr && *env != '\0')
    return env;
  // Run outside ctest: this file is <root>/tests/host/safetensors/st_test_util.h.
  return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

inline fs::path model_dir(const std::string& name) {
  return source_dir() / "tests" / "data" / "models" / name;
}

// A fresh folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hostlm-st-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const fs::path& p) const { return path_ / p; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors image: length field, header text as given, then the data bytes.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = {}) {
  return u64_le(header.size()) + header + data;
}

// safetensors dtype spelling of the DTypes the tests write.
inline std::string st_dtype(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    default:
      throw std::runtime_error("test writer: unexpected dtype");
  }
}

// Serialises views into a well-formed safetensors image (data laid out in the given order).
inline std::string safetensors_of(const std::vector<const TensorView*>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const TensorView* t : tensors) {
    header[t->name] = {{"dtype", st_dtype(t->type)},
                       {"shape", t->shape},
                       {"data_offsets", {data.size(), data.size() + t->nbytes}}};
    data.append(static_cast<const char*>(t->data), t->nbytes);
  }
  return safetensors_bytes(header.dump(), data);
}

// The message of the hostlm::Error that `f` throws; fails the test when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected hostlm::Error";
  return {};
}

inline float bf16_to_f32(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE half to float, written out so the test does not rely on the library under test.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? std::nanf("") : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// Element i of a F32/F16/BF16 view as float; memcpy because mapped data need not be aligned.
inline float element(const TensorView& t, size_t i) {
  if (t.type == DType::F32) {
    float f;
    std::memcpy(&f, static_cast<const char*>(t.data) + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char*>(t.data) + 2 * i, 2);
  return t.type == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

}  // namespace hostlm::st_test

namespace hostlm::st_test {

// Checks that an error message names the file at fault and the problem.
inline ::testing::AssertionResult names(const std::string& message, const fs::path& file,
                                        const std::string& problem) {
  if (message.rfind(file.string() + ": ", 0) != 0)
    return ::testing::AssertionFailure()
           << "message does not start with '" << file.string() << ": ': " << message;
  if (message.find(problem) == std::string::npos)
    return ::testing::AssertionFailure() << "message lacks '" << problem << "': " << message;
  return ::testing::AssertionSuccess();
}

}  // namespace hostlm::st_test
