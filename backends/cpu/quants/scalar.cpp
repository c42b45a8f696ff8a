// Exact dequantization of rows and the portable dot products built on it.
#include <cstddef>

#include "cpu/quants/blocks.h"
#include "cpu/quants/iq_blocks.h"
#include "cpu/quants/quants.h"

namespace hostlm::cpu::quants {
namespace {

using DecodeFn = void (*)(const uint8_t*, float*);

template <DecodeFn Decode, int Elems, int Bytes>
void row(const void* w, float* out, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  for (int64_t i = 0; i < n; i += Elems, b += Bytes) Decode(b, out + i);
}

// Blocks are summed in float, the row in double: the result then differs from the exact
// product of the dequantized row with x by little more than one block's rounding.
template <DecodeFn Decode, int Elems, int Bytes>
float dot(const void* w, const float* x, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(w);
  float y[Elems];
  double total = 0.0;
  for (int64_t i = 0; i < n; i += Elems, b += Bytes) {
    Decode(b, y);
    float s = 0.f;
    for (int j = 0; j < Elems; ++j) s += y[j] * x[i + j];
    total += s;
  }
  return static_cast<float>(total);
}

struct Entry {
  DType type;
  RowToF32Fn row;
  DotFn dot;
};

template <DecodeFn Decode, int Elems, int Bytes>
constexpr Entry entry(DType type) {
  return {type, row<Decode, Elems, Bytes>, dot<Decode, Elems, Bytes>};
}

constexpr Entry kEntries[] = {
    entry<decode_q4_0, q4_0::kElems, q4_0::kBytes>(DType::Q4_0),
    entry<decode_q4_1, q4_1::kElems, q4_1::kBytes>(DType::Q4_1),
    entry<decode_q5_0, q5_0::kElems, q5_0::kBytes>(DType::Q5_0),
    entry<decode_q5_1, q5_1::kElems, q5_1::kBytes>(DType::Q5_1),
    entry<decode_q8_0, q8_0::kElems, q8_0::kBytes>(DType::Q8_0),
    entry<decode_iq4_nl, iq4_nl::kElems, iq4_nl::kBytes>(DType::IQ4_NL),
    entry<decode_q2_k, q2_k::kElems, q2_k::kBytes>(DType::Q2_K),
    entry<decode_q3_k, q3_k::kElems, q3_k::kBytes>(DType::Q3_K),
    entry<decode_q4_k, q4_k::kElems, q4_k::kBytes>(DType::Q4_K),
    entry<decode_q5_k, q5_k::kElems, q5_k::kBytes>(DType::Q5_K),
    entry<decode_q6_k, q6_k::kElems, q6_k::kBytes>(DType::Q6_K),
    entry<decode_iq4_xs, iq4_xs::kElems, iq4_xs::kBytes>(DType::IQ4_XS),
    entry<decode_tq1_0, tq1_0::kElems, tq1_0::kBytes>(DType::TQ1_0),
    entry<decode_tq2_0, tq2_0::kElems, tq2_0::kBytes>(DType::TQ2_0),
    entry<decode_mxfp4, mxfp4::kElems, mxfp4::kBytes>(DType::MXFP4),
    entry<decode_iq2_xxs, iq2_xxs::kElems, iq2_xxs::kBytes>(DType::IQ2_XXS),
    entry<decode_iq2_xs, iq2_xs::kElems, iq2_xs::kBytes>(DType::IQ2_XS),
    entry<decode_iq2_s, iq2_s::kElems, iq2_s::kBytes>(DType::IQ2_S),
    entry<decode_iq3_xxs, iq3_xxs::kElems, iq3_xxs::kBytes>(DType::IQ3_XXS),
    entry<decode_iq3_s, iq3_s::kElems, iq3_s::kBytes>(DType::IQ3_S),
    entry<decode_iq1_s, iq1_s::kElems, iq1_s::kBytes>(DType::IQ1_S),
    entry<decode_iq1_m, iq1_m::kElems, iq1_m::kBytes>(DType::IQ1_M),
};

const Entry* find(DType type) {
  for (const Entry& e : kEntries)
    if (e.type == type) return &e;
  return nullptr;
}

}  // namespace

RowToF32Fn row_to_f32_scalar(DType type) {
  const Entry* e = find(type);
  return e ? e->row : nullptr;
}

DotFn dot_scalar(DType type) {
  const Entry* e = find(type);
  return e ? e->dot : nullptr;
}

}  // namespace hostlm::cpu::quants
