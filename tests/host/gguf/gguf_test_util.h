// Helpers shared by the GGUF tests: scratch directories, a byte builder for hand-made
// (often malformed) files, and comparisons that treat NaN payloads and nesting exactly.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm::test {

// A directory of its own per test (tests may run in parallel processes), removed at the end.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        "hostlm-gguf-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (info) name += std::string("-") + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path file(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Little-endian GGUF pieces, appended in the order called.
class Bytes {
 public:
  template <class T>
  Bytes& le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) data_ += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& u8(uint8_t v) { return le(v); }
  Bytes& u32(uint32_t v) { return le(v); }
  Bytes& u64(uint64_t v) { return le(v); }
  Bytes& f32(float v) { return le(std::bit_cast<uint32_t>(v)); }
  Bytes& raw(std::string_view s) {
    data_ += s;
    return *this;
  }
  Bytes& str(std::string_view s) { return u64(s.size()).raw(s); }
  Bytes& zeros(size_t n) {
    data_.append(n, '\0');
    return *this;
  }
  Bytes& pad_to(uint64_t alignment) {
    while (data_.size() % alignment != 0) data_ += '\0';
    return *this;
  }
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(GgufType::U32)).u32(v);
  }
  Bytes& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(static_cast<uint32_t>(GgufType::STRING)).str(v);
  }
  Bytes& tensor_info(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                     uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }

  const std::string& data() const { return data_; }
  size_t size() const { return data_.size(); }

 private:
  std::string data_;
};

// Opens `path` expecting hostlm::Error whose message starts with the path and contains every
// part. Anything else (success, another exception type) fails.
inline ::testing::AssertionResult open_fails_with(const std::filesystem::path& path,
                                                  std::initializer_list<std::string_view> parts) {
  try {
    auto f = GgufFile::open(path);
    return ::testing::AssertionFailure() << "opened without error: " << path;
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(path.string() + ": ", 0) != 0)
      return ::testing::AssertionFailure() << "message does not start with the path: " << msg;
    for (std::string_view p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "non-hostlm exception: " << e.what();
  }
}

// Same for any callable.
template <class F>
::testing::AssertionResult throws_error_with(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    return ::testing::AssertionFailure() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (std::string_view p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "non-hostlm exception: " << e.what();
  }
}

// Exact equality: same declared type, same stored value (doubles bit for bit), same nesting.
inline bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type() != b.type() || a.storage().index() != b.storage().index()) return false;
  if (const auto* x = std::get_if<double>(&a.storage()))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b.storage()));
  if (a.type() != GgufType::ARRAY) return a.storage() == b.storage();
  const GgufArray* x = a.as_array();
  const GgufArray* y = b.as_array();
  if (x->element_type != y->element_type || x->elements.size() != y->elements.size()) return false;
  for (size_t i = 0; i < x->elements.size(); ++i)
    if (!same_value(x->elements[i], y->elements[i])) return false;
  return true;
}

// Deterministic filler so each tensor's bytes differ from every other's.
inline std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& b : v) {
    s = s * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(s >> 24);
  }
  return v;
}

}  // namespace hostlm::test
