#include "hostlm/dtype.h"

#include <array>
#include <limits>

#include "hostlm/error.h"

namespace hostlm {
namespace {

struct Entry {
  uint32_t id;
  DTypeTraits traits;
};

// Block sizes and bytes per block of every ggml type id hostlm knows (ggml's own table).
constexpr std::array kTypes = {
    Entry{0, {"f32", 1, 4}},         Entry{1, {"f16", 1, 2}},
    Entry{2, {"q4_0", 32, 18}},      Entry{3, {"q4_1", 32, 20}},
    Entry{6, {"q5_0", 32, 22}},      Entry{7, {"q5_1", 32, 24}},
    Entry{8, {"q8_0", 32, 34}},      Entry{9, {"q8_1", 32, 36}},
    Entry{10, {"q2_K", 256, 84}},    Entry{11, {"q3_K", 256, 110}},
    Entry{12, {"q4_K", 256, 144}},   Entry{13, {"q5_K", 256, 176}},
    Entry{14, {"q6_K", 256, 210}},   Entry{15, {"q8_K", 256, 292}},
    Entry{16, {"iq2_xxs", 256, 66}}, Entry{17, {"iq2_xs", 256, 74}},
    Entry{18, {"iq3_xxs", 256, 98}}, Entry{19, {"iq1_s", 256, 50}},
    Entry{20, {"iq4_nl", 32, 18}},   Entry{21, {"iq3_s", 256, 110}},
    Entry{22, {"iq2_s", 256, 82}},   Entry{23, {"iq4_xs", 256, 136}},
    Entry{24, {"i8", 1, 1}},         Entry{25, {"i16", 1, 2}},
    Entry{26, {"i32", 1, 4}},        Entry{27, {"i64", 1, 8}},
    Entry{28, {"f64", 1, 8}},        Entry{29, {"iq1_m", 256, 56}},
    Entry{30, {"bf16", 1, 2}},       Entry{34, {"tq1_0", 256, 54}},
    Entry{35, {"tq2_0", 256, 66}},   Entry{39, {"mxfp4", 32, 17}},
};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t ggml_type_id) {
  for (const Entry& e : kTypes)
    if (e.id == ggml_type_id) return e.traits;
  return std::nullopt;
}

DTypeTraits dtype_traits(DType type) {
  auto t = dtype_traits(static_cast<uint32_t>(type));
  if (!t) throw Error("unknown tensor type id " + std::to_string(static_cast<uint32_t>(type)));
  return *t;
}

std::string_view dtype_name(DType type) {
  auto t = dtype_traits(static_cast<uint32_t>(type));
  return t ? t->name : std::string_view("unknown");
}

std::optional<size_t> dtype_bytes(DType type, uint64_t n_elements) {
  auto t = dtype_traits(static_cast<uint32_t>(type));
  if (!t || n_elements % static_cast<uint64_t>(t->block_size) != 0) return std::nullopt;
  const uint64_t blocks = n_elements / static_cast<uint64_t>(t->block_size);
  if (blocks > std::numeric_limits<uint64_t>::max() / t->block_bytes) return std::nullopt;
  return static_cast<size_t>(blocks * t->block_bytes);
}

}  // namespace hostlm
