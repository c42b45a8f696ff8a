// Parses and validates a whole GGUF image held in memory (a mapping or a fuzzer's input).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_format.h"
#include "hostlm/gguf.h"

namespace hostlm::gguf {

struct ParsedGguf {
  uint32_t version = 0;
  uint64_t alignment = 0;
  uint64_t data_offset = 0;  // from the start of the file
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::vector<GgufTensorInfo> tensors;
};

// `name` prefixes every error message (the file's path). Every tensor of the result lies
// inside `bytes`, aligned, and overlaps no other. `max_values` bounds the number of metadata
// values (array elements included); only tests lower it.
ParsedGguf parse_gguf(std::span<const unsigned char> bytes, const std::string& name,
                      uint64_t max_values = kMaxMetadataValues);

}  // namespace hostlm::gguf
