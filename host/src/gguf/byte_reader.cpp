#include "gguf/byte_reader.h"

#include "hostlm/error.h"

namespace hostlm::gguf {

void ByteReader::fail(const std::string& problem) const { throw Error(name_ + ": " + problem); }

const unsigned char* ByteReader::take(uint64_t n, std::string_view what) {
  if (n > remaining())
    fail("truncated file: " + std::string(what) + " needs " + std::to_string(n) +
         " bytes at offset " + std::to_string(pos_) + " but only " + std::to_string(remaining()) +
         " remain");
  const unsigned char* p = bytes_.data() + pos_;
  pos_ += n;
  return p;
}

std::string ByteReader::string(std::string_view what) {
  const uint64_t start = pos_;
  const uint64_t length = u64(what);
  if (length > remaining())
    fail("truncated file: " + std::string(what) + " has string length " + std::to_string(length) +
         " at offset " + std::to_string(start) + " but only " + std::to_string(remaining()) +
         " bytes remain");
  const unsigned char* p = take(length, what);
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
}

}  // namespace hostlm::gguf
