// Every weight type the CUDA backend keeps quantized, by its piece decoder: the legacy and
// K-quant types (pieces.h), the codebook types (pieces_iq.h) and the ternary types
// (pieces_ternary.h). A kernel templated on a decoder serves a type once it is listed here.
#pragma once
#include "cuda/quants/pieces.h"
#include "cuda/quants/pieces_iq.h"
#include "cuda/quants/pieces_ternary.h"
#include "cuda/quants/split_layout.h"

namespace hostlm::cuda::quants {

// Every type with a piece decoder, as one list so that code visiting each type (kernel
// attributes set once per device) cannot miss one that with_quant_type serves.
// clang-format off
#define HQ_QUANT_TYPES(X) \
  X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(Q8_0) X(IQ4_NL) \
  X(MXFP4) X(Q2_K) X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) \
  X(IQ4_XS) X(IQ2_XXS) X(IQ2_XS) X(IQ2_S) X(IQ3_XXS) X(IQ3_S) \
  X(IQ1_S) X(IQ1_M) X(TQ1_0) X(TQ2_0)
// clang-format on

#define HQ_QUANT_TYPE_ENTRY(T) DType::T,
inline constexpr DType kQuantTypes[] = {HQ_QUANT_TYPES(HQ_QUANT_TYPE_ENTRY)};
#undef HQ_QUANT_TYPE_ENTRY

// Calls f(Q{}) with the piece decoder of `type`; returns false for types without one.
template <typename F>
bool with_quant_type(DType type, F&& f) {
  switch (type) {
#define HQ_QUANT_TYPE_CASE(T) \
  case DType::T:              \
    f(T{});                   \
    return true;
    HQ_QUANT_TYPES(HQ_QUANT_TYPE_CASE)
#undef HQ_QUANT_TYPE_CASE
    default:
      return false;
  }
}

// Each decoder's pieces read exactly its split layout's main array, block by block.
template <class Q>
constexpr bool pieces_fit_layout() {
  constexpr SplitLayout l = split_layout(Q::kType);
  return l.block_elems == Q::kBlockElems && Q::kBlockElems == Q::kPieces * 16 * Q::kRanges;
}
static_assert(pieces_fit_layout<IQ2_XXS>() && pieces_fit_layout<IQ2_XS>() &&
              pieces_fit_layout<IQ2_S>() && pieces_fit_layout<IQ3_XXS>() &&
              pieces_fit_layout<IQ3_S>() && pieces_fit_layout<IQ1_S>() &&
              pieces_fit_layout<IQ1_M>() && pieces_fit_layout<TQ1_0>() &&
              pieces_fit_layout<TQ2_0>());

}  // namespace hostlm::cuda::quants
