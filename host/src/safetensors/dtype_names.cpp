#include "safetensors/dtype_names.h"

#include <array>
#include <utility>

namespace hostlm::safetensors {
namespace {

// Every dtype the safetensors format defines. The ones without a DType are still listed so
// that their byte ranges can be validated (and overlaps detected) like any other tensor.
constexpr std::array<std::pair<std::string_view, StDType>, 20> kDTypes = {{
    {"F32", {32, DType::F32}},      {"F16", {16, DType::F16}},      {"BF16", {16, DType::BF16}},
    {"F64", {64, DType::F64}},      {"I64", {64, DType::I64}},      {"I32", {32, DType::I32}},
    {"I16", {16, DType::I16}},      {"I8", {8, DType::I8}},         {"BOOL", {8, std::nullopt}},
    {"U8", {8, std::nullopt}},      {"U16", {16, std::nullopt}},    {"U32", {32, std::nullopt}},
    {"U64", {64, std::nullopt}},    {"F8_E4M3", {8, std::nullopt}}, {"F8_E5M2", {8, std::nullopt}},
    {"F8_E8M0", {8, std::nullopt}}, {"F6_E2M3", {6, std::nullopt}}, {"F6_E3M2", {6, std::nullopt}},
    {"F4", {4, std::nullopt}},      {"C64", {64, std::nullopt}},
}};

}  // namespace

std::optional<StDType> lookup_dtype(std::string_view name) {
  for (const auto& [n, t] : kDTypes)
    if (n == name) return t;
  return std::nullopt;
}

}  // namespace hostlm::safetensors
