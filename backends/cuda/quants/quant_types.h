// Every weight type the CUDA backend keeps quantized, by its piece decoder: the legacy and
// K-quant types (pieces.h), the codebook types (pieces_iq.h) and the ternary types
// (pieces_ternary.h). A kernel templated on a decoder serves a type once it is listed here.
#pragma once
#include "cuda/quants/pieces.h"
#include "cuda/quants/pieces_iq.h"
#include "cuda/quants/pieces_ternary.h"
#include "cuda/quants/split_layout.h"

namespace hostlm::cuda::quants {

// Calls f(Q{}) with the piece decoder of `type`; returns false for types without one.
template <typename F>
bool with_quant_type(DType type, F&& f) {
  switch (type) {
#define HQ_QUANT_TYPE(T) \
  case DType::T:         \
    f(T{});              \
    return true;
    HQ_QUANT_TYPE(Q4_0)
    HQ_QUANT_TYPE(Q4_1)
    HQ_QUANT_TYPE(Q5_0)
    HQ_QUANT_TYPE(Q5_1)
    HQ_QUANT_TYPE(Q8_0)
    HQ_QUANT_TYPE(IQ4_NL)
    HQ_QUANT_TYPE(MXFP4)
    HQ_QUANT_TYPE(Q2_K)
    HQ_QUANT_TYPE(Q3_K)
    HQ_QUANT_TYPE(Q4_K)
    HQ_QUANT_TYPE(Q5_K)
    HQ_QUANT_TYPE(Q6_K)
    HQ_QUANT_TYPE(IQ4_XS)
    HQ_QUANT_TYPE(IQ2_XXS)
    HQ_QUANT_TYPE(IQ2_XS)
    HQ_QUANT_TYPE(IQ2_S)
    HQ_QUANT_TYPE(IQ3_XXS)
    HQ_QUANT_TYPE(IQ3_S)
    HQ_QUANT_TYPE(IQ1_S)
    HQ_QUANT_TYPE(IQ1_M)
    HQ_QUANT_TYPE(TQ1_0)
    HQ_QUANT_TYPE(TQ2_0)
#undef HQ_QUANT_TYPE
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
