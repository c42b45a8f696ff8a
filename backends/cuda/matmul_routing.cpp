// CudaBackend's products: which kernel takes a matmul (the quantized paths, the 16-bit ring,
// the GEMV, or a cuBLAS product, prefill_products.cpp), how products of one input go in one
// launch, and the fused epilogues (conv1d, SwiGLU) of the one-token products.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"

namespace hostlm::cuda {

// Quantized matrices of one type go in one GEMV launch (decode: q/k/v, the four input
// projections of a delta-rule layer, gate/up), or for the tile product's token counts in one
// launch per block shape where the type has the pipelined kernel; the rest one matmul each.
void CudaBackend::matmul_same_input(std::span<const MatmulOut> outs, const float* x, int64_t T) {
  if (T <= 0) return;
  Grouped done{};
  if (!(quant_->groups(T) || quant_->tile_groups(T)) || outs.size() > done.size())
    return Backend::matmul_same_input(outs, x, T);
  matmul_groups(outs, x, T, done);
}

// One decoding sequence: the convolution runs in the epilogue of the one-token product of
// the first matrix's group (ConvStep), which saves its launch (one a delta-rule layer).
// HOSTLM_CUDA_FUSE_CONV=0 launches it apart. For 16-bit matrices only with
// HOSTLM_CUDA_FUSE_CONV16=1: in the ring it made the 9B BF16 step longer (4,365 -> 4,385 us,
// session 26), the channel's loads at each row pair's start costing more than the launch.
void CudaBackend::matmul_same_input_conv1d(std::span<const MatmulOut> outs, const float* x,
                                           int64_t T, std::span<const SequenceSlice> seqs,
                                           int64_t channels, int64_t K, const float* weight,
                                           float* conv_out) {
  Grouped done{};
  const bool sixteen = options_.fuse_conv16 && !outs.empty() && one_token_ring(*outs[0].w);
  if (!options_.fuse_conv || outs.empty() || outs.size() > done.size() || T != 1 ||
      seqs.size() != 1 || seqs[0].T != 1 || seqs[0].row != 0 || K < 1 || K > kFusedConvMaxK ||
      outs[0].w->rows != channels ||
      !(sixteen || (quants::QuantMatmul::supports(outs[0].w->type) && quant_->groups(1))))
    return Backend::matmul_same_input_conv1d(outs, x, T, seqs, channels, K, weight, conv_out);
  const Weight* ws[quants::kGemvGroupMax];
  float* ys[quants::kGemvGroupMax];
  const int n = same_input_group(outs, 0, done, ws, ys, sixteen);
  {
    const auto timed = profile_->scope("matmul (gemv) + conv1d");
    const float* w = host_array(weight, static_cast<size_t>(channels * K));
    const ConvStep conv{w, seqs[0].conv_state, conv_out, channels, static_cast<int>(K)};
    // The fused launch, or the product and the convolution after it: the convolution's
    // writes are the last either way, the products' too when fused.
    last_writes_.start(!quant_->folds_norms());
    for (int j = 0; j < n; ++j) last_writes_.add(ys[j], static_cast<size_t>(ws[j]->rows));
    last_writes_.add(conv_out, static_cast<size_t>(channels));
    last_writes_.add(seqs[0].conv_state, static_cast<size_t>((K - 1) * channels));
    if (!skip_matmul_group_conv(ws, ys, n, x, conv) &&
        !(sixteen ? matmul16_group(ws, ys, n, x, {&conv, false})
                  : quant_->matmul_group_conv(ws, ys, n, x, conv))) {
      if (sixteen)
        matmul16_group(ws, ys, n, x);
      else
        quant_->matmul_group(ws, ys, n, x, T);
      cuda::RecurrentSeqs one;
      one.n = 1;
      one.T[0] = 1;
      one.row[0] = 0;
      one.conv_state[0] = seqs[0].conv_state;
      one.state[0] = nullptr;
      check(cuda::conv1d_silu(one, 1, ys[0], channels, K, w, conv_out, stream_), "conv1d_silu");
    }
  }
  matmul_groups(outs, x, T, done);  // the other types and widths
}

// One decoding sequence through 16-bit gate and up matrices: the SwiGLU runs where a warp
// of the ring (gemv16_staged.cu) has both sums of a row, which saves the swiglu launch of
// every MLP: 9B BF16 step 4,445-4,470 -> 4,365-4,367 us (session 26).
// HOSTLM_CUDA_FUSE_SWIGLU=0 launches it apart. (The same epilogue in the quantized one-token
// product made the 9B Q8_0 step longer, 2,483 -> 2,544 us, so it is not there.)
void CudaBackend::matmul_swiglu(const Weight& w_gate, const Weight& w_up, const float* x, int64_t T,
                                float* gate, float* up) {
  if (!options_.fuse_swiglu || T != 1 || !one_token_ring(w_gate) || w_up.type != w_gate.type ||
      w_up.rows != w_gate.rows || w_up.cols != w_gate.cols || w_up.row_bytes != w_gate.row_bytes)
    return Backend::matmul_swiglu(w_gate, w_up, x, T, gate, up);
  const auto timed = profile_->scope("matmul (gemv) + swiglu");
  const auto rows = static_cast<size_t>(w_gate.rows);
  // The fused launch, or the products and the SwiGLU after them; the SwiGLU's writes last.
  last_writes_.start(!quant_->folds_norms());
  last_writes_.add(gate, rows);
  last_writes_.add(up, rows);
  const Weight* ws[2] = {&w_gate, &w_up};
  float* ys[2] = {gate, up};
  const bool replay = skip_matmul_group(ws, ys, 2, x, 1);
  if (skip(kMatmulSwiglu, options_.fuse_swiglu) || replay) return;
  quant_->forget_acts();
  if (matmul16_group(ws, ys, 2, x, {nullptr, true})) return;
  matmul16_group(ws, ys, 2, x);
  const cuda::Int8ActsOut acts = quant_->produce_acts(gate, static_cast<int64_t>(rows));
  check(cuda::swiglu(gate, up, gate, rows, stream_, acts), "swiglu");
}

// Whether a one-token product of w goes through the 16-bit ring, grouped.
bool CudaBackend::one_token_ring(const Weight& w) const {
  return (w.type == DType::BF16 || w.type == DType::F16) && options_.group16 &&
         gemv16_ring_.chunk > 0;
}

// Output i and the later ones not yet done that one launch can take with it (its quantized
// type and width, at most kGemvGroupMax) into ws and ys, marked done; returns how many.
// With `group16`, BF16 and F16 matrices group too (gemv16_staged_group).
int CudaBackend::same_input_group(std::span<const MatmulOut> outs, size_t i, Grouped& done,
                                  const Weight** ws, float** ys, bool group16) {
  const Weight& wi = *outs[i].w;
  ws[0] = &wi;
  ys[0] = outs[i].y;
  done[i] = true;
  int n = 1;
  const bool quantized = quants::QuantMatmul::supports(wi.type);
  const bool sixteen = group16 && (wi.type == DType::BF16 || wi.type == DType::F16);
  const int most = quantized ? quants::kGemvGroupMax : kGemv16GroupMax;
  if ((quantized || sixteen) && wi.rows > 0)
    for (size_t j = i + 1; j < outs.size() && n < most; ++j)
      if (!done[j] && outs[j].w->type == wi.type && outs[j].w->cols == wi.cols &&
          outs[j].w->rows > 0) {
        ws[n] = outs[j].w;
        ys[n++] = outs[j].y;
        done[j] = true;
      }
  return n;
}

// Every output not yet done, grouped as same_input_group says (T within groups(T)).
void CudaBackend::matmul_groups(std::span<const MatmulOut> outs, const float* x, int64_t T,
                                Grouped& done) {
  for (size_t i = 0; i < outs.size(); ++i) {
    if (done[i]) continue;
    const Weight* ws[quants::kGemvGroupMax];
    float* ys[quants::kGemvGroupMax];
    const int n = same_input_group(outs, i, done, ws, ys,
                                   T == 1 && options_.group16 && gemv16_ring_.chunk > 0);
    if (n == 1) {
      matmul(*ws[0], x, T, ys[0]);
      continue;
    }
    const auto timed =
        profile_->scope(profile_->detailed() ? profile_->label(matmul_label(T), group_label(ws, n))
                                             : matmul_label(T));
    last_writes_.start(!quant_->folds_norms());
    for (int j = 0; j < n; ++j) last_writes_.add(ys[j], static_cast<size_t>(T * ws[j]->rows));
    if (skip_matmul_group(ws, ys, n, x, T)) continue;
    if (quants::QuantMatmul::supports(ws[0]->type)) {
      quant_->matmul_group(ws, ys, n, x, T);
      continue;
    }
    quant_->forget_acts();
    matmul16_group(ws, ys, n, x);
  }
}

// One token through BF16 or F16 matrices of one type and width: one launch of the ring
// (gemv16_staged.cu), or where it does not apply one gemv each. With an epilogue, only the
// ring's launch: false where it does not apply.
bool CudaBackend::matmul16_group(const Weight* const* ws, float* const* ys, int n, const float* x,
                                 Gemv16Epilogue epilogue) {
  Gemv16Target targets[kGemv16GroupMax];
  for (int j = 0; j < n; ++j) targets[j] = {ws[j]->data, ws[j]->row_bytes, ws[j]->rows, ys[j]};
  if (gemv16_staged_group(gemv16_ring_, ws[0]->type, targets, n, ws[0]->cols, x, stream_,
                          epilogue)) {
    check(cudaGetLastError(), "matmul (gemv16 staged group)");
    return true;
  }
  if (epilogue.conv != nullptr || epilogue.swiglu) return false;
  for (int j = 0; j < n; ++j)
    check(gemv(ws[j]->type, ws[j]->data, ws[j]->row_bytes, ws[j]->rows, ws[j]->cols, x, 1, ys[j],
               stream_),
          "matmul (gemv)");
  return true;
}

// A group's type and shapes for the detailed profile: "q4_K group 8192+4096+32+32x4096".
std::string CudaBackend::group_label(const Weight* const* ws, int n) {
  std::string rows;
  for (int j = 0; j < n; ++j) rows += (j > 0 ? "+" : "") + std::to_string(ws[j]->rows);
  return std::string(dtype_name(ws[0]->type)) + " group " + rows + "x" +
         std::to_string(ws[0]->cols);
}

// The profile tells the decode GEMV, the few-token tile product and prefill apart.
const char* CudaBackend::matmul_label(int64_t T) const {
  return quant_->groups(T)                       ? "matmul (gemv)"
         : T <= quants::QuantMatmul::kTileTokens ? "matmul (7-64 rows)"
                                                 : "matmul (prefill)";
}

void CudaBackend::matmul(const Weight& w, const float* x, int64_t T, float* y) {
  const auto timed = profile_->scope(
      profile_->detailed() ? profile_->label(matmul_label(T), std::string(dtype_name(w.type)) +
                                                                  " " + std::to_string(w.rows) +
                                                                  "x" + std::to_string(w.cols))
                           : matmul_label(T));
  if (T <= 0 || w.rows == 0) return;
  last_writes_.start(!quant_->folds_norms());
  last_writes_.add(y, static_cast<size_t>(T * w.rows));
  if (skip(kMatmul, w.data, w.type, w.rows, w.cols, x, T, y)) {
    if (widens(w, T)) {  // the widening scratch must be the recorded one
      step_.add(dequant_);
      if (widen_bytes(w, T) > dequant_bytes_) replay_cannot();
    }
    return;
  }
  if (quants::QuantMatmul::supports(w.type)) return quant_->matmul(w, x, T, y);
  quant_->forget_acts();
  if (T == 1 &&
      gemv16_staged(gemv16_ring_, w.type, w.data, w.row_bytes, w.rows, w.cols, x, y, stream_)) {
    check(cudaGetLastError(), "matmul (gemv16 staged)");
    return;
  }
  if (T <= kGemvMaxTokens) {
    check(gemv(w.type, w.data, w.row_bytes, w.rows, w.cols, x, T, y, stream_), "matmul (gemv)");
    return;
  }
  // Prefill. F32 weights: cuBLAS float32 GEMM, exact like the CPU. 16-bit weights stay in
  // their type on tensor cores, and by default the activations are rounded to it too, as
  // llama.cpp and transformers in bfloat16 do: BF16 activations for BF16 weights, half
  // (after a per-token power of two, undone on the output) for F16. One product per matrix;
  // the exact mode (HOSTLM_CUDA_EXACT_16BIT=1) costs three for BF16, the activations as a
  // sum of BF16 parts (bf16_split.cu), and widens F16 weights to float32 in row blocks.
  // 9B BF16 pp512 on an H200: 11,118 t/s with three parts, 21,209-21,463 with one.
  if (w.type == DType::F32) {
    sgemm(static_cast<const float*>(w.data), w.rows, w.cols, x, T, y);
    return;
  }
  if (w.type == DType::BF16) return bf16_gemm(w, x, T, y);
  if (w.type == DType::F16 && !options_.exact_16bit) return f16_gemm(w, x, T, y);
  const int64_t block_rows = widen_block_rows(w);
  float* scratch = dequant_scratch(widen_bytes(w, T));
  for (int64_t r0 = 0; r0 < w.rows; r0 += block_rows) {
    const int64_t rows = std::min(block_rows, w.rows - r0);
    check(rows_to_f32(w.type, static_cast<const uint8_t*>(w.data) + w.row_bytes * r0, w.row_bytes,
                      rows, w.cols, scratch, stream_),
          "matmul (widen weights)");
    sgemm(scratch, rows, w.cols, x, T, y + r0, w.rows);
  }
}

}  // namespace hostlm::cuda
