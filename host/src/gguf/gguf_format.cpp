#include "gguf/gguf_format.h"

#include <limits>
#include <memory>
#include <variant>

namespace hostlm::gguf {

bool is_known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufType::F64); }

std::string_view value_type_name(GgufType type) {
  switch (type) {
    case GgufType::U8:
      return "u8";
    case GgufType::I8:
      return "i8";
    case GgufType::U16:
      return "u16";
    case GgufType::I16:
      return "i16";
    case GgufType::U32:
      return "u32";
    case GgufType::I32:
      return "i32";
    case GgufType::F32:
      return "f32";
    case GgufType::BOOL:
      return "bool";
    case GgufType::STRING:
      return "string";
    case GgufType::ARRAY:
      return "array";
    case GgufType::U64:
      return "u64";
    case GgufType::I64:
      return "i64";
    case GgufType::F64:
      return "f64";
  }
  return "unknown";
}

bool is_integer_type(GgufType type) {
  switch (type) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::U16:
    case GgufType::I16:
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::U64:
    case GgufType::I64:
      return true;
    default:
      return false;
  }
}

bool is_unsigned_type(GgufType type) {
  return type == GgufType::U8 || type == GgufType::U16 || type == GgufType::U32 ||
         type == GgufType::U64;
}

size_t scalar_size(GgufType type) {
  switch (type) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::BOOL:
      return 1;
    case GgufType::U16:
    case GgufType::I16:
      return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
      return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
      return 8;
    default:
      return 0;
  }
}

uint64_t min_encoded_size(GgufType type) {
  if (type == GgufType::STRING) return 8;     // length
  if (type == GgufType::ARRAY) return 4 + 8;  // element type, count
  return scalar_size(type);
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::optional<std::string> tensor_shape_problem(uint32_t type_id, const std::vector<uint64_t>& ne,
                                                uint64_t& nbytes) {
  const auto traits = dtype_traits(type_id);
  if (!traits) return "unknown tensor type id " + std::to_string(type_id);
  if (ne.empty() || ne.size() > kMaxDims)
    return "n_dims " + std::to_string(ne.size()) + " is out of range (1.." +
           std::to_string(kMaxDims) + ")";
  // TensorView keeps the shape as int64, so the element count must fit there.
  constexpr uint64_t kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t n = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    if (ne[i] == 0) return "ne[" + std::to_string(i) + "] is 0";
    if (ne[i] > kMaxElements / n)
      return "element count overflows (ne[" + std::to_string(i) + "] = " + std::to_string(ne[i]) +
             ")";
    n *= ne[i];
  }
  const auto block = static_cast<uint64_t>(traits->block_size);
  if (ne[0] % block != 0)
    return "ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " +
           std::string(traits->name) + " block size " + std::to_string(block);
  const auto bytes = dtype_bytes(static_cast<DType>(type_id), n);
  if (!bytes) return "byte size of " + std::to_string(n) + " elements overflows";
  nbytes = *bytes;
  return std::nullopt;
}

namespace {

// Inclusive range of each integer width, as the storage alternative holds it.
struct Range {
  int64_t min;
  uint64_t max;
};

Range integer_range(GgufType type) {
  switch (type) {
    case GgufType::U8:
      return {0, 0xff};
    case GgufType::I8:
      return {-0x80, 0x7f};
    case GgufType::U16:
      return {0, 0xffff};
    case GgufType::I16:
      return {-0x8000, 0x7fff};
    case GgufType::U32:
      return {0, 0xffffffffu};
    case GgufType::I32:
      return {std::numeric_limits<int32_t>::min(), 0x7fffffff};
    case GgufType::U64:
      return {0, std::numeric_limits<uint64_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), 0x7fffffffffffffffu};
  }
}

std::optional<std::string> integer_problem(const GgufValue& value) {
  // Runs once per element of vocabulary-sized arrays: build strings only on failure.
  const GgufType t = value.type();
  const Range r = integer_range(t);
  auto name = [t] { return std::string(value_type_name(t)); };
  if (is_unsigned_type(t)) {
    const auto* v = std::get_if<uint64_t>(&value.storage());
    if (!v) return name() + " value is not stored as an unsigned integer";
    if (*v > r.max) return "value " + std::to_string(*v) + " does not fit in " + name();
  } else {
    const auto* v = std::get_if<int64_t>(&value.storage());
    if (!v) return name() + " value is not stored as a signed integer";
    if (*v < r.min || (*v > 0 && static_cast<uint64_t>(*v) > r.max))
      return "value " + std::to_string(*v) + " does not fit in " + name();
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> value_problem(const GgufValue& value, int depth) {
  const GgufType t = value.type();
  if (!is_known_value_type(static_cast<uint32_t>(t)))
    return "unknown value type id " + std::to_string(static_cast<uint32_t>(t));
  if (is_integer_type(t)) return integer_problem(value);
  switch (t) {
    case GgufType::F32:
    case GgufType::F64:
      if (!std::holds_alternative<double>(value.storage()))
        return std::string(value_type_name(t)) + " value is not stored as a double";
      return std::nullopt;
    case GgufType::BOOL:
      if (!std::holds_alternative<bool>(value.storage())) return "bool value is not stored as bool";
      return std::nullopt;
    case GgufType::STRING:
      if (!std::holds_alternative<std::string>(value.storage()))
        return "string value is not stored as a string";
      return std::nullopt;
    default:
      break;
  }
  const auto* holder = std::get_if<std::shared_ptr<const GgufArray>>(&value.storage());
  if (!holder || !*holder) return "array value has no array";
  if (depth + 1 > kMaxArrayDepth)
    return "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels";
  const GgufArray& array = **holder;
  if (!is_known_value_type(static_cast<uint32_t>(array.element_type)))
    return "unknown array element type id " +
           std::to_string(static_cast<uint32_t>(array.element_type));
  for (size_t i = 0; i < array.elements.size(); ++i) {
    const GgufValue& e = array.elements[i];
    if (e.type() != array.element_type)
      return "array element " + std::to_string(i) + " has type " +
             std::string(value_type_name(e.type())) + ", expected " +
             std::string(value_type_name(array.element_type));
    if (auto p = value_problem(e, depth + 1))
      return "array element " + std::to_string(i) + ": " + *p;
  }
  return std::nullopt;
}

uint64_t value_count(const GgufValue& value) {
  uint64_t n = 1;
  if (const GgufArray* a = value.as_array())
    for (const GgufValue& e : a->elements) n += value_count(e);
  return n;
}

std::string quote_name(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

}  // namespace hostlm::gguf
