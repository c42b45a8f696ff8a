#include <limits>

#include "gguf/gguf_format.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm {
namespace {

[[noreturn]] void wrong_type(const GgufFile& file, std::string_view key, const GgufValue& value,
                             std::string_view expected) {
  std::string found(gguf::value_type_name(value.type()));
  if (const GgufArray* a = value.as_array())
    found += " of " + std::string(gguf::value_type_name(a->element_type));
  throw Error(file.path().string() + ": key " + gguf::quote_name(key) + " has type " + found +
              ", expected " + std::string(expected));
}

int64_t integer_of(const GgufFile& file, std::string_view key, const GgufValue& value) {
  if (auto v = value.as_int()) return *v;
  const auto* u = std::get_if<uint64_t>(&value.storage());
  throw Error(file.path().string() + ": key " + gguf::quote_name(key) + ": value " +
              (u ? std::to_string(*u) : std::string("(malformed)")) + " does not fit in int64");
}

}  // namespace

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(*this, key, *v, "an integer");
  return integer_of(*this, key, *v);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (auto f = v->as_float()) return f;
  wrong_type(*this, key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (auto b = v->as_bool()) return b;
  wrong_type(*this, key, *v, "bool");
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  wrong_type(*this, key, *v, "string");
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const GgufArray* a = v->as_array();
  if (!a || !gguf::is_integer_type(a->element_type))
    wrong_type(*this, key, *v, "an array of integers");
  std::vector<int64_t> out;
  out.reserve(a->elements.size());
  for (const GgufValue& e : a->elements) out.push_back(integer_of(*this, key, e));
  return out;
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  const GgufArray* a = v->as_array();
  if (!a || a->element_type != GgufType::STRING) wrong_type(*this, key, *v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(a->elements.size());
  for (const GgufValue& e : a->elements) out.push_back(*e.as_string());
  return out;
}

}  // namespace hostlm
