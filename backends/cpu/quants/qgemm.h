// Integer matrix products of block-quantized weight rows with activations quantized on the
// fly to 8 bits (the scheme llama.cpp uses on the CPU).
//
// Activations are quantized per block to int8 with one float scale: 32-element blocks for
// the weight types with 32-element blocks, 256-element blocks (with sums of every 16) for
// the super-block types. A weight block then meets its activation block in integer
// arithmetic (byte products summed in 32-bit lanes), and one float multiply-add per block
// (per super-block for the K types) applies both scales. The error against the product with
// float32 activations is bounded by the activation rounding: at most half an activation
// step (d/2) per element, weighted by |w|.
//
// Each instruction set has its own table: a portable scalar path, AVX2 (byte products with
// vpmaddubsw) and AVX-512 VNNI (vpdpbusd/vpdpwssd on 256-bit vectors); best() picks one at
// run time.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hostlm/dtype.h"

namespace hostlm::cpu::quants {

// 32 activations: x ~= d * qs, and sum = sum of qs (for weight types stored with an offset).
struct ActQ8_0 {
  int8_t qs[32];
  float d;
  int32_t sum;
};

// 256 activations: x ~= d * qs; bsums[k] = sum of qs[16k .. 16k+15].
struct ActQ8_K {
  int8_t qs[256];
  int16_t bsums[16];
  float d;
};

enum class ActKind { Q8_0, Q8_K };

// Quantizes n activations (a whole number of blocks): round to nearest even of x * 127/amax,
// d = amax / 127 per block. The scalar and vector versions give identical blocks.
void quantize_act_q8_0(const float* x, ActQ8_0* out, int64_t n);
void quantize_act_q8_k(const float* x, ActQ8_K* out, int64_t n);
void quantize_act_q8_0_scalar(const float* x, ActQ8_0* out, int64_t n);
void quantize_act_q8_k_scalar(const float* x, ActQ8_K* out, int64_t n);

// y[t * y_stride + r] = (row r of the weights) . (activation row t), for r < n_rows and
// t < n_tok. Weight rows hold n_blocks blocks of the weight type, row_bytes apart; the
// activation rows hold n_blocks * (weight block / activation block) activation blocks each,
// act_stride bytes apart. Allocates nothing; safe to call from several threads at once on
// disjoint outputs.
using QGemmFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* act,
                         size_t act_stride, int64_t n_tok, int64_t n_blocks, float* y,
                         size_t y_stride);

// The batch form: activations of kPackTokens tokens interleaved so that one 32-byte vector
// holds 4 consecutive elements of each of 8 tokens (see pack_acts). A kernel then multiplies
// a broadcast 4-byte group of one weight row with 8 tokens at once, and its sums have one
// token per lane. y as for QGemmFn; `packed` holds ceil(n_tok / 8) groups.
using QGemmPackedFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t n_rows,
                               const void* packed, int64_t n_tok, int64_t n_blocks, float* y,
                               size_t y_stride);
constexpr int kPackTokens = 8;

struct QGemm {
  ActKind act;
  QGemmFn gemm;
  QGemmPackedFn gemm_packed;  // nullptr where this instruction set has none
};

// Bytes of one packed group of 8 tokens of n activations, and of the groups for n_tok tokens.
size_t packed_group_bytes(ActKind kind, int64_t n);
// Quantizes tokens [t0, t1) of x ([n_tok, n] float32, t0 a multiple of 8) into their packed
// groups at `packed` (the start of group 0); tokens past n_tok pad the last group with zeros.
void pack_acts(ActKind kind, const float* x, int64_t n, int64_t n_tok, int64_t t0, int64_t t1,
               void* packed);

// Layout of a packed group, per activation block b (32 elements for Q8_0, 256 for Q8_K):
//   int8  q[block/4][8][4]   element 4i+j of token t at q[i][t][j]
//   float d[8]               per token
//   Q8_0: int32 sum[8], float dsum[8] (= d * sum)
//   Q8_K: float bsum[16][8]  sums of each 16 elements, per token
struct PackedQ8_0 {
  int8_t q[8][kPackTokens][4];
  float d[kPackTokens];
  int32_t sum[kPackTokens];
  float dsum[kPackTokens];
};
struct PackedQ8_K {
  int8_t q[64][kPackTokens][4];
  float d[kPackTokens];
  float bsum[16][kPackTokens];
};

// nullptr for types without an integer kernel (F32/F16/BF16 and the unsupported ones).
const QGemm* qgemm_scalar(DType type);
const QGemm* qgemm_avx2(DType type);  // needs AVX2, FMA, F16C
const QGemm* qgemm_vnni(DType type);  // needs AVX512F/BW/VL and AVX512-VNNI as well
const QGemm* qgemm_best(DType type);  // the fastest this CPU runs

bool cpu_has_avx512_vnni();

// Bytes of one quantized activation row of n elements for `kind`.
size_t act_row_bytes(ActKind kind, int64_t n);
// Quantizes one row of n activations into `out` (act_row_bytes(kind, n) bytes).
void quantize_act_row(ActKind kind, const float* x, void* out, int64_t n);

}  // namespace hostlm::cpu::quants
