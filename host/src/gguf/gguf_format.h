// Facts of the GGUF container that the reader and the writer must agree on, so that a file
// the writer accepts is always one the reader accepts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/gguf.h"

namespace hostlm::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" as a little-endian u32
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr std::string_view kAlignmentKey = "general.alignment";
inline constexpr uint32_t kMaxDims = 4;  // ggml's GGML_MAX_DIMS
// Arrays of arrays are read recursively; a bound keeps a hostile file from exhausting the
// stack (each level costs only 12 bytes of file). Real files nest at most twice.
inline constexpr int kMaxArrayDepth = 32;
// Each value costs ~50 bytes of memory but can take 1 byte of file, so the total is bounded
// as well: 8M values (~400 MiB at worst), several times what the largest vocabularies need
// (tokens, scores, types and merges of a 262k vocabulary come to about 1.3M).
inline constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 23;

// Smallest encodings, used to refuse counts the remaining bytes could not possibly hold
// before anything is allocated.
inline constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, one byte
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim

bool is_known_value_type(uint32_t id);
std::string_view value_type_name(GgufType type);
bool is_integer_type(GgufType type);
bool is_unsigned_type(GgufType type);
size_t scalar_size(GgufType type);         // 0 for STRING and ARRAY
uint64_t min_encoded_size(GgufType type);  // of one value of this type, never 0

bool is_power_of_two(uint64_t v);

// Checks a tensor's type and dimensions as both the reader and writer require them. Returns
// the problem, or nullopt and the data size in `nbytes`.
std::optional<std::string> tensor_shape_problem(uint32_t type_id, const std::vector<uint64_t>& ne,
                                                uint64_t& nbytes);

// Checks that a value's storage matches its declared type, integers fit their width and
// array elements all have the element type. Returns the problem, or nullopt.
std::optional<std::string> value_problem(const GgufValue& value, int depth = 0);

// The value itself plus every array element below it, as counted against kMaxMetadataValues.
uint64_t value_count(const GgufValue& value);

// Names and keys come from untrusted files; keep error messages printable and short.
std::string quote_name(std::string_view text);

}  // namespace hostlm::gguf
