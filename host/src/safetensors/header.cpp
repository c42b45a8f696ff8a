#include "safetensors/header.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>

#include "hostlm/error.h"
#include "safetensors/dtype_names.h"
#include "safetensors/json_text.h"
#include "safetensors/quote.h"

namespace hostlm::safetensors {
namespace {

using nlohmann::json;

// A header is three levels deep (object -> entry -> shape); allow slack, refuse pathological
// nesting before it costs memory.
constexpr int kMaxHeaderDepth = 8;

uint64_t read_u64_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

// Shapes come from the file and may have millions of entries; a message shows the start.
std::string shape_string(const std::vector<int64_t>& shape) {
  constexpr size_t kShown = 16;
  std::string s = "[";
  for (size_t i = 0; i < shape.size() && i < kShown; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() > kShown) s += ", ... (" + std::to_string(shape.size()) + " dimensions)";
  return s + "]";
}

std::string range_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// The non-negative integer in `v`, or nullopt (negative, fractional, or not a number).
std::optional<uint64_t> as_index(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

struct Range {
  uint64_t begin, end;
  const std::string* name;
};

struct Entry {
  std::string dtype;
  StDType st;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

[[noreturn]] void fail(const std::string& label, const std::string& name,
                       const std::string& problem) {
  throw Error(label + ": tensor " + quote_name(name) + ": " + problem);
}

// Element count must stay within int64 (TensorView::n_elements) and the bit count within
// uint64, so huge dimensions are caught here rather than wrapping later.
uint64_t check_shape(const std::string& label, const std::string& name, const json& s,
                     uint32_t bits_per_element, std::vector<int64_t>& shape) {
  constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t count = 1;
  bool overflow = false;
  for (const json& dim : s) {
    if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)
      fail(label, name, "negative dimension " + std::to_string(dim.get<int64_t>()) + " in shape");
    const auto n = as_index(dim);
    if (!n)
      fail(label, name,
           "shape entry " + (dim.is_number() ? dim.dump() : std::string(dim.type_name())) +
               " is not a non-negative integer");
    if (*n > kMaxCount) fail(label, name, "dimension " + std::to_string(*n) + " is too large");
    shape.push_back(static_cast<int64_t>(*n));
    if (*n == 0) {
      count = 0;
    } else if (count != 0 && count > kMaxCount / *n) {
      overflow = true;
    } else {
      count *= *n;
    }
  }
  // A zero dimension anywhere makes the tensor empty, however large the others are.
  if ((overflow && count != 0) || count > std::numeric_limits<uint64_t>::max() / bits_per_element)
    fail(label, name, "shape " + shape_string(shape) + " has too many elements");
  return count;
}

Entry check_entry(const std::string& label, const std::string& name, const json& entry,
                  uint64_t data_size) {
  if (!entry.is_object()) fail(label, name, "entry is not an object");
  Entry out;
  const auto d = entry.find("dtype");
  if (d == entry.end() || !d->is_string()) fail(label, name, "missing or non-string \"dtype\"");
  out.dtype = d->get<std::string>();
  const auto st = lookup_dtype(out.dtype);
  if (!st) fail(label, name, "unknown dtype " + quote_name(out.dtype));
  out.st = *st;

  const auto s = entry.find("shape");
  if (s == entry.end() || !s->is_array()) fail(label, name, "missing or non-array \"shape\"");
  const uint64_t bits = check_shape(label, name, *s, st->bits, out.shape) * st->bits;
  const std::string what = "shape " + shape_string(out.shape) + " of dtype " + out.dtype;
  if (bits % 8 != 0) fail(label, name, what + " is not a whole number of bytes");
  const uint64_t nbytes = bits / 8;

  const auto o = entry.find("data_offsets");
  if (o == entry.end() || !o->is_array() || o->size() != 2)
    fail(label, name, "\"data_offsets\" must be [begin, end]");
  const auto b = as_index((*o)[0]);
  const auto e = as_index((*o)[1]);
  if (!b || !e) fail(label, name, "\"data_offsets\" must be non-negative integers");
  out.begin = *b;
  out.end = *e;
  const std::string range = "data_offsets " + range_string(out.begin, out.end);
  if (out.begin > out.end) fail(label, name, range + " end before they begin");
  if (out.end > data_size)
    fail(label, name,
         range + " lie outside the data area of " + std::to_string(data_size) + " bytes");
  if (out.end - out.begin != nbytes)
    fail(label, name,
         what + " needs " + std::to_string(nbytes) + " bytes but " + range + " span " +
             std::to_string(out.end - out.begin));
  return out;
}

json parse_metadata(const json& m, const std::string& label) {
  if (!m.is_object()) throw Error(label + ": \"__metadata__\" is not an object");
  for (const auto& [key, value] : m.items())
    if (!value.is_string())
      throw Error(label + ": \"__metadata__\" value of " + quote_name(key) + " is not a string");
  return m;
}

void reject_overlaps(std::vector<Range>& ranges, const std::string& label) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const Range& prev = ranges[i - 1];
    const Range& cur = ranges[i];
    if (cur.begin < prev.end)
      throw Error(label + ": tensors " + quote_name(*prev.name) + " " +
                  range_string(prev.begin, prev.end) + " and " + quote_name(*cur.name) + " " +
                  range_string(cur.begin, cur.end) + " overlap");
  }
}

}  // namespace

ParsedHeader parse_safetensors(const std::byte* data, size_t size, const std::string& label) {
  if (size < 8)
    throw Error(label + ": truncated: " + std::to_string(size) +
                " bytes is too short for the 8-byte header length");
  const uint64_t header_len = read_u64_le(data);
  if (header_len > kMaxHeaderBytes)
    throw Error(label + ": header length " + std::to_string(header_len) + " exceeds the limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes");
  if (header_len > size - 8)
    throw Error(label + ": header length " + std::to_string(header_len) + " exceeds the file (" +
                std::to_string(size - 8) + " bytes after the length field)");

  const std::string_view text(reinterpret_cast<const char*>(data + 8), header_len);
  const json header = parse_json(text, label, "invalid JSON header", kMaxHeaderDepth);
  if (!header.is_object())
    throw Error(label + ": header is not a JSON object (got " + header.type_name() + ")");

  const std::byte* base = data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  ParsedHeader out;
  std::vector<Range> ranges;
  ranges.reserve(header.size());
  // nlohmann keeps object keys sorted, so the views come out ordered by name.
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      out.metadata = parse_metadata(it.value(), label);
      continue;
    }
    Entry e = check_entry(label, name, it.value(), data_size);
    if (e.st.type) {
      TensorView v;
      v.name = name;
      v.type = *e.st.type;
      v.shape = std::move(e.shape);
      v.data = base + e.begin;
      v.nbytes = static_cast<size_t>(e.end - e.begin);
      out.tensors.push_back(std::move(v));
    } else {
      out.unsupported.emplace(name, e.dtype);
    }
    // Empty tensors own no bytes, so they cannot overlap anything.
    if (e.begin != e.end) ranges.push_back({e.begin, e.end, &name});
  }
  reject_overlaps(ranges, label);
  return out;
}

}  // namespace hostlm::safetensors
