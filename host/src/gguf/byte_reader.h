// Bounds-checked little-endian reads from an untrusted byte range. Every read that would run
// past the end throws hostlm::Error("<name>: truncated file: ...") instead of reading on.
#pragma once
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace hostlm::gguf {

class ByteReader {
 public:
  ByteReader(std::span<const unsigned char> bytes, std::string name)
      : bytes_(bytes), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  uint64_t offset() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // `what` names the field being read, for the truncation message.
  uint8_t u8(std::string_view what) { return *take(1, what); }
  uint16_t u16(std::string_view what) { return load<uint16_t>(take(2, what)); }
  uint32_t u32(std::string_view what) { return load<uint32_t>(take(4, what)); }
  uint64_t u64(std::string_view what) { return load<uint64_t>(take(8, what)); }
  float f32(std::string_view what) { return std::bit_cast<float>(u32(what)); }
  double f64(std::string_view what) { return std::bit_cast<double>(u64(what)); }
  // u64 length followed by that many bytes; the length is checked before anything is copied.
  std::string string(std::string_view what);

  [[noreturn]] void fail(const std::string& problem) const;

 private:
  const unsigned char* take(uint64_t n, std::string_view what);

  // Assembled byte by byte so the result does not depend on the host's byte order.
  template <class T>
  static T load(const unsigned char* p) {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v = static_cast<T>(v | (static_cast<T>(p[i]) << (8 * i)));
    return v;
  }

  std::span<const unsigned char> bytes_;
  std::string name_;
  uint64_t pos_ = 0;
};

}  // namespace hostlm::gguf
