#include <limits>
#include <string>

#include "gguf/gguf_format.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm {

GgufValue GgufValue::array(GgufType element_type, std::vector<GgufValue> elements) {
  // Refusing mixed arrays here reports the mistake where it is made, not at write time.
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].type() != element_type)
      throw Error("GgufValue::array: element " + std::to_string(i) + " has type " +
                  std::string(gguf::value_type_name(elements[i].type())) + ", expected " +
                  std::string(gguf::value_type_name(element_type)));
  }
  auto a = std::make_shared<GgufArray>();
  a->element_type = element_type;
  a->elements = std::move(elements);
  return {GgufType::ARRAY, std::shared_ptr<const GgufArray>(std::move(a))};
}

bool GgufValue::is_integer() const { return gguf::is_integer_type(type_); }

std::optional<int64_t> GgufValue::as_int() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&storage_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&storage_)) return *i;
  return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
  if (is_float()) {
    if (const auto* d = std::get_if<double>(&storage_)) return *d;
    return std::nullopt;
  }
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&storage_)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&storage_)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufType::BOOL) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&storage_)) return *b;
  return std::nullopt;
}

const std::string* GgufValue::as_string() const {
  if (type_ != GgufType::STRING) return nullptr;
  return std::get_if<std::string>(&storage_);
}

const GgufArray* GgufValue::as_array() const {
  if (type_ != GgufType::ARRAY) return nullptr;
  const auto* p = std::get_if<std::shared_ptr<const GgufArray>>(&storage_);
  return p ? p->get() : nullptr;
}

}  // namespace hostlm
