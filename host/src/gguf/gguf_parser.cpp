#include "gguf/gguf_parser.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "gguf/byte_reader.h"
#include "gguf/gguf_format.h"

namespace hostlm::gguf {
namespace {

std::string hex_bytes(std::span<const unsigned char> bytes) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    if (!out.empty()) out += ' ';
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

uint32_t read_version(ByteReader& r, std::span<const unsigned char> bytes) {
  if (r.u32("magic") != kMagic)
    r.fail("bad magic: expected \"GGUF\" (47 47 55 46), found " + hex_bytes(bytes.first(4)));
  const uint32_t version = r.u32("version");
  if (version == 1)
    r.fail(
        "GGUF version 1 is not supported (its 32-bit counts predate the current layout); "
        "only versions 2 and 3 are");
  if (version != 2 && version != 3) {
    // A version whose low half is zero is almost always a byte-swapped (big-endian) file.
    const std::string hint =
        (version & 0xffff) == 0 ? " (looks like a big-endian file, which is not supported)" : "";
    r.fail("unsupported GGUF version " + std::to_string(version) + hint +
           "; only versions 2 and 3 are");
  }
  return version;
}

class Parser {
 public:
  Parser(std::span<const unsigned char> bytes, const std::string& name, uint64_t max_values)
      : r_(bytes, name), max_values_(max_values), values_left_(max_values) {}

  ParsedGguf run(std::span<const unsigned char> bytes) {
    ParsedGguf out;
    out.version = read_version(r_, bytes);
    const uint64_t n_tensors = r_.u64("tensor count");
    const uint64_t n_kv = r_.u64("metadata count");
    if (n_kv > r_.remaining() / kMinKvBytes)
      r_.fail("n_kv " + std::to_string(n_kv) + " is larger than the remaining " +
              std::to_string(r_.remaining()) + " bytes could hold (truncated or corrupt file)");
    if (n_tensors > r_.remaining() / kMinTensorInfoBytes)
      r_.fail("n_tensors " + std::to_string(n_tensors) + " is larger than the remaining " +
              std::to_string(r_.remaining()) + " bytes could hold (truncated or corrupt file)");
    read_metadata(n_kv, out);
    out.alignment = alignment_of(out);
    if (n_tensors > r_.remaining() / kMinTensorInfoBytes)
      r_.fail("n_tensors " + std::to_string(n_tensors) + " is larger than the " +
              std::to_string(r_.remaining()) +
              " bytes left after the metadata could hold (truncated or corrupt file)");
    read_tensor_infos(n_tensors, out);
    const uint64_t end = r_.offset();
    const uint64_t rem = end % out.alignment;
    // end <= file size, so this cannot wrap unless the file is nearly 2^64 bytes.
    out.data_offset = rem == 0 ? end : end + (out.alignment - rem);
    check_tensor_placement(out);
    return out;
  }

 private:
  void read_metadata(uint64_t n_kv, ParsedGguf& out) {
    // Counts are only bounded by the file size; reserving the claimed count of a large file
    // could still ask for far more memory than the entries it really holds.
    out.metadata.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, kReserveCap)));
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key = r_.string("key of metadata entry " + std::to_string(i));
      const std::string ctx = "value of key " + quote_name(key);
      const uint32_t type_id = r_.u32(ctx);
      if (!is_known_value_type(type_id))
        r_.fail("key " + quote_name(key) + ": unknown value type id " + std::to_string(type_id));
      GgufValue value = read_value(static_cast<GgufType>(type_id), ctx, 0);
      out.metadata.emplace_back(std::move(key), std::move(value));
    }
    std::unordered_set<std::string_view> seen;
    for (const auto& kv : out.metadata)
      if (!seen.insert(kv.first).second) r_.fail("duplicate key " + quote_name(kv.first));
  }

  GgufValue read_value(GgufType type, const std::string& ctx, int depth) {
    if (values_left_ == 0)
      r_.fail(ctx + ": metadata holds more than " + std::to_string(max_values_) +
              " values in total (a limit that keeps a hostile file from exhausting memory)");
    --values_left_;
    switch (type) {
      case GgufType::U8:
        return {type, uint64_t{r_.u8(ctx)}};
      case GgufType::I8:
        return {type, int64_t{static_cast<int8_t>(r_.u8(ctx))}};
      case GgufType::U16:
        return {type, uint64_t{r_.u16(ctx)}};
      case GgufType::I16:
        return {type, int64_t{static_cast<int16_t>(r_.u16(ctx))}};
      case GgufType::U32:
        return {type, uint64_t{r_.u32(ctx)}};
      case GgufType::I32:
        return {type, int64_t{static_cast<int32_t>(r_.u32(ctx))}};
      case GgufType::U64:
        return {type, r_.u64(ctx)};
      case GgufType::I64:
        return {type, static_cast<int64_t>(r_.u64(ctx))};
      case GgufType::F32:
        return {type, double{r_.f32(ctx)}};
      case GgufType::F64:
        return {type, r_.f64(ctx)};
      case GgufType::BOOL: {
        const uint64_t at = r_.offset();
        const uint8_t b = r_.u8(ctx);
        if (b > 1)
          r_.fail(ctx + ": bool byte " + std::to_string(b) + " at offset " + std::to_string(at) +
                  " is neither 0 nor 1");
        return {type, b == 1};
      }
      case GgufType::STRING:
        return {type, r_.string(ctx)};
      case GgufType::ARRAY:
        return read_array(ctx, depth);
    }
    r_.fail(ctx + ": unknown value type id " + std::to_string(static_cast<uint32_t>(type)));
  }

  GgufValue read_array(const std::string& ctx, int depth) {
    if (depth + 1 > kMaxArrayDepth)
      r_.fail(ctx + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    const uint32_t element_id = r_.u32(ctx);
    if (!is_known_value_type(element_id))
      r_.fail(ctx + ": unknown array element value type id " + std::to_string(element_id));
    const auto element_type = static_cast<GgufType>(element_id);
    const uint64_t count = r_.u64(ctx);
    if (count > r_.remaining() / min_encoded_size(element_type))
      r_.fail(ctx + ": array count " + std::to_string(count) + " of " +
              std::string(value_type_name(element_type)) + " is larger than the remaining " +
              std::to_string(r_.remaining()) + " bytes could hold (truncated or corrupt file)");
    auto array = std::make_shared<GgufArray>();
    array->element_type = element_type;
    array->elements.reserve(static_cast<size_t>(std::min(count, values_left_)));
    for (uint64_t i = 0; i < count; ++i)
      array->elements.push_back(read_value(element_type, ctx, depth + 1));
    return {GgufType::ARRAY, std::shared_ptr<const GgufArray>(std::move(array))};
  }

  uint64_t alignment_of(const ParsedGguf& out) {
    for (const auto& [key, value] : out.metadata) {
      if (key != kAlignmentKey) continue;
      if (!value.is_integer())
        r_.fail(std::string(kAlignmentKey) + " has type " +
                std::string(value_type_name(value.type())) + ", expected an integer");
      const auto a = value.as_int();
      if (!a || *a <= 0 || !is_power_of_two(static_cast<uint64_t>(*a)))
        r_.fail(std::string(kAlignmentKey) + " = " +
                (a ? std::to_string(*a) : std::string("(out of range)")) +
                " is not a nonzero power of two");
      return static_cast<uint64_t>(*a);
    }
    return kDefaultAlignment;
  }

  void read_tensor_infos(uint64_t n_tensors, ParsedGguf& out) {
    out.tensors.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, kReserveCap)));
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensorInfo info;
      info.name = r_.string("name of tensor info " + std::to_string(i));
      const std::string ctx = "tensor " + quote_name(info.name);
      const uint32_t n_dims = r_.u32(ctx);
      if (n_dims == 0 || n_dims > kMaxDims)
        r_.fail(ctx + ": n_dims " + std::to_string(n_dims) + " is out of range (1.." +
                std::to_string(kMaxDims) + ")");
      info.ne.resize(n_dims);
      for (uint64_t& d : info.ne) d = r_.u64(ctx);
      const uint32_t type_id = r_.u32(ctx);
      info.offset = r_.u64(ctx);
      if (auto problem = tensor_shape_problem(type_id, info.ne, info.nbytes))
        r_.fail(ctx + ": " + *problem);
      info.type = static_cast<DType>(type_id);
      if (info.offset % out.alignment != 0)
        r_.fail(ctx + ": offset " + std::to_string(info.offset) +
                " is not a multiple of the alignment " + std::to_string(out.alignment));
      out.tensors.push_back(std::move(info));
    }
    std::unordered_set<std::string_view> seen;
    for (const GgufTensorInfo& t : out.tensors)
      if (!seen.insert(t.name).second) r_.fail("duplicate tensor name " + quote_name(t.name));
  }

  void check_tensor_placement(const ParsedGguf& out) {
    const uint64_t size = r_.size();
    const uint64_t room = out.data_offset <= size ? size - out.data_offset : 0;
    for (const GgufTensorInfo& t : out.tensors) {
      if (t.offset > room || t.nbytes > room - t.offset)
        r_.fail("tensor " + quote_name(t.name) + ": data at file offset " +
                std::to_string(out.data_offset) + " + " + std::to_string(t.offset) + " (" +
                std::to_string(t.nbytes) + " bytes) lies outside the file (" +
                std::to_string(size) + " bytes)");
    }
    std::vector<size_t> order(out.tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = out.tensors[order[k - 1]];
      const GgufTensorInfo& next = out.tensors[order[k]];
      // Inside the file, so the sum cannot wrap.
      if (prev.offset + prev.nbytes > next.offset)
        r_.fail("tensors " + quote_name(prev.name) + " (bytes " + std::to_string(prev.offset) +
                ".." + std::to_string(prev.offset + prev.nbytes) + ") and " +
                quote_name(next.name) + " (from " + std::to_string(next.offset) + ") overlap");
    }
  }

  static constexpr uint64_t kReserveCap = 1 << 16;

  ByteReader r_;
  uint64_t max_values_;
  uint64_t values_left_;
};

}  // namespace

ParsedGguf parse_gguf(std::span<const unsigned char> bytes, const std::string& name,
                      uint64_t max_values) {
  return Parser(bytes, name, max_values).run(bytes);
}

}  // namespace hostlm::gguf
