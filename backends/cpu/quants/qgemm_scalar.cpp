// Portable integer kernels: each weight block is decoded to its integer levels and scales,
// multiplied with the int8 activations in int32, then scaled once per block.
#include <algorithm>

#include "cpu/quants/blocks.h"
#include "cpu/quants/iq_levels.h"
#include "cpu/quants/qgemm.h"

namespace hostlm::cpu::quants {
namespace {

// A 32-element block as integers: value_i = d * q[i] + m.
struct Dec32 {
  int q[32];
  float d, m;
};

// A super-block as integers: value_i = d * sc[i/16] * q[i] - dmin * mn[i/16].
struct DecK {
  int q[256];
  int sc[16], mn[16];
  float d, dmin;
};

void dec_q4_0(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + q4_0::kD);
  o.m = 0.f;
  for (int j = 0; j < 16; ++j) {
    o.q[j] = (b[q4_0::kQs + j] & 15) - 8;
    o.q[j + 16] = (b[q4_0::kQs + j] >> 4) - 8;
  }
}
void dec_q4_1(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + q4_1::kD);
  o.m = load_f16(b + q4_1::kM);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = b[q4_1::kQs + j] & 15;
    o.q[j + 16] = b[q4_1::kQs + j] >> 4;
  }
}
void dec_q5_0(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + q5_0::kD);
  o.m = 0.f;
  const uint32_t h = load_u32(b + q5_0::kQh);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = ((b[q5_0::kQs + j] & 15) | static_cast<int>(((h >> j) & 1) << 4)) - 16;
    o.q[j + 16] = ((b[q5_0::kQs + j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1) << 4)) - 16;
  }
}
void dec_q5_1(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + q5_1::kD);
  o.m = load_f16(b + q5_1::kM);
  const uint32_t h = load_u32(b + q5_1::kQh);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = (b[q5_1::kQs + j] & 15) | static_cast<int>(((h >> j) & 1) << 4);
    o.q[j + 16] = (b[q5_1::kQs + j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1) << 4);
  }
}
void dec_q8_0(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + q8_0::kD);
  o.m = 0.f;
  for (int j = 0; j < 32; ++j) o.q[j] = static_cast<int8_t>(b[q8_0::kQs + j]);
}
void dec_iq4_nl(const uint8_t* b, Dec32& o) {
  o.d = load_f16(b + iq4_nl::kD);
  o.m = 0.f;
  for (int j = 0; j < 16; ++j) {
    o.q[j] = kIq4Values[b[iq4_nl::kQs + j] & 15];
    o.q[j + 16] = kIq4Values[b[iq4_nl::kQs + j] >> 4];
  }
}

void dec_q2_k(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + q2_k::kD);
  o.dmin = load_f16(b + q2_k::kDmin);
  for (int k = 0; k < 16; ++k) {
    o.sc[k] = b[q2_k::kScales + k] & 15;
    o.mn[k] = b[q2_k::kScales + k] >> 4;
  }
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, shift = 2 * ((i % 128) / 32), l = i % 32;
    o.q[i] = (b[q2_k::kQs + 32 * half + l] >> shift) & 3;
  }
}
void dec_q3_k(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + q3_k::kD);
  o.dmin = 0.f;
  for (int k = 0; k < 16; ++k) {
    o.sc[k] = q3k_scale(b + q3_k::kScales, k);
    o.mn[k] = 0;
  }
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, s = (i % 128) / 32, l = i % 32;
    const int low = (b[q3_k::kQs + 32 * half + l] >> (2 * s)) & 3;
    const bool high = (b[q3_k::kHmask + l] >> (4 * half + s)) & 1;
    o.q[i] = low - (high ? 0 : 4);
  }
}
void dec_q4_k(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + q4_k::kD);
  o.dmin = load_f16(b + q4_k::kDmin);
  for (int j = 0; j < 8; ++j) {
    int sc, mn;
    k4_scale_min(b + q4_k::kScales, j, sc, mn);
    o.sc[2 * j] = o.sc[2 * j + 1] = sc;
    o.mn[2 * j] = o.mn[2 * j + 1] = mn;
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      o.q[64 * c + l] = b[q4_k::kQs + 32 * c + l] & 15;
      o.q[64 * c + 32 + l] = b[q4_k::kQs + 32 * c + l] >> 4;
    }
}
void dec_q5_k(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + q5_k::kD);
  o.dmin = load_f16(b + q5_k::kDmin);
  for (int j = 0; j < 8; ++j) {
    int sc, mn;
    k4_scale_min(b + q5_k::kScales, j, sc, mn);
    o.sc[2 * j] = o.sc[2 * j + 1] = sc;
    o.mn[2 * j] = o.mn[2 * j + 1] = mn;
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const uint8_t q = b[q5_k::kQs + 32 * c + l], h = b[q5_k::kQh + l];
      o.q[64 * c + l] = (q & 15) | (((h >> (2 * c)) & 1) << 4);
      o.q[64 * c + 32 + l] = (q >> 4) | (((h >> (2 * c + 1)) & 1) << 4);
    }
}
void dec_q6_k(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + q6_k::kD);
  o.dmin = 0.f;
  for (int k = 0; k < 16; ++k) {
    o.sc[k] = static_cast<int8_t>(b[q6_k::kScales + k]);
    o.mn[k] = 0;
  }
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + q6_k::kQl + 64 * half;
    const uint8_t* qh = b + q6_k::kQh + 32 * half;
    int* q = o.q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      q[l] = ((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32;
      q[l + 32] = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
      q[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      q[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
}
void dec_iq4_xs(const uint8_t* b, DecK& o) {
  o.d = load_f16(b + iq4_xs::kD);
  o.dmin = 0.f;
  for (int ib = 0; ib < 8; ++ib) {
    o.sc[2 * ib] = o.sc[2 * ib + 1] = iq4xs_scale(b, ib);
    o.mn[2 * ib] = o.mn[2 * ib + 1] = 0;
    for (int j = 0; j < 16; ++j) {
      o.q[32 * ib + j] = kIq4Values[b[iq4_xs::kQs + 16 * ib + j] & 15];
      o.q[32 * ib + 16 + j] = kIq4Values[b[iq4_xs::kQs + 16 * ib + j] >> 4];
    }
  }
}

void dec_mxfp4(const uint8_t* b, Dec32& o) {
  o.d = e8m0_half_to_f32(b[mxfp4::kE]);
  o.m = 0.f;
  for (int j = 0; j < 16; ++j) {
    o.q[j] = kMxfp4Values[b[mxfp4::kQs + j] & 15];
    o.q[j + 16] = kMxfp4Values[b[mxfp4::kQs + j] >> 4];
  }
}

// The codebook and ternary types through their integer form (iq_blocks.h).
template <class L>
void dec_levels(const uint8_t* b, DecK& o) {
  int8_t sc[16], q[256];
  o.d = L::scales(b, sc);
  o.dmin = 0.f;
  L::quants(b, q);
  for (int k = 0; k < 16; ++k) {
    o.sc[k] = sc[k];
    o.mn[k] = 0;
  }
  for (int i = 0; i < 256; ++i) o.q[i] = q[i];
}

template <void (*Dec)(const uint8_t*, Dec32&), int Bytes>
void gemm32(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* act, size_t act_stride,
            int64_t n_tok, int64_t n_blocks, float* y, size_t y_stride) {
  Dec32 dec;
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t t = 0; t < n_tok; ++t) {
      const auto* a =
          reinterpret_cast<const ActQ8_0*>(static_cast<const uint8_t*>(act) + t * act_stride);
      float total = 0.f;
      for (int64_t i = 0; i < n_blocks; ++i) {
        Dec(w + r * row_bytes + i * Bytes, dec);
        int dot = 0;
        for (int j = 0; j < 32; ++j) dot += dec.q[j] * a[i].qs[j];
        total += dec.d * a[i].d * static_cast<float>(dot) +
                 dec.m * a[i].d * static_cast<float>(a[i].sum);
      }
      y[t * y_stride + r] = total;
    }
  }
}

template <void (*Dec)(const uint8_t*, DecK&), int Bytes>
void gemmk(const uint8_t* w, size_t row_bytes, int64_t n_rows, const void* act, size_t act_stride,
           int64_t n_tok, int64_t n_blocks, float* y, size_t y_stride) {
  DecK dec;
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t t = 0; t < n_tok; ++t) {
      const auto* a =
          reinterpret_cast<const ActQ8_K*>(static_cast<const uint8_t*>(act) + t * act_stride);
      float total = 0.f;
      for (int64_t i = 0; i < n_blocks; ++i) {
        Dec(w + r * row_bytes + i * Bytes, dec);
        int dot = 0, mins = 0;
        for (int k = 0; k < 16; ++k) {
          int s = 0;
          for (int j = 16 * k; j < 16 * k + 16; ++j) s += dec.q[j] * a[i].qs[j];
          dot += dec.sc[k] * s;
          mins += dec.mn[k] * a[i].bsums[k];
        }
        total += a[i].d * (dec.d * static_cast<float>(dot) - dec.dmin * static_cast<float>(mins));
      }
      y[t * y_stride + r] = total;
    }
  }
}

struct Entry {
  DType type;
  QGemm k;
};

const Entry kEntries[] = {
    {DType::Q4_0, {ActKind::Q8_0, gemm32<dec_q4_0, q4_0::kBytes>, nullptr}},
    {DType::Q4_1, {ActKind::Q8_0, gemm32<dec_q4_1, q4_1::kBytes>, nullptr}},
    {DType::Q5_0, {ActKind::Q8_0, gemm32<dec_q5_0, q5_0::kBytes>, nullptr}},
    {DType::Q5_1, {ActKind::Q8_0, gemm32<dec_q5_1, q5_1::kBytes>, nullptr}},
    {DType::Q8_0, {ActKind::Q8_0, gemm32<dec_q8_0, q8_0::kBytes>, nullptr}},
    {DType::IQ4_NL, {ActKind::Q8_0, gemm32<dec_iq4_nl, iq4_nl::kBytes>, nullptr}},
    {DType::Q2_K, {ActKind::Q8_K, gemmk<dec_q2_k, q2_k::kBytes>, nullptr}},
    {DType::Q3_K, {ActKind::Q8_K, gemmk<dec_q3_k, q3_k::kBytes>, nullptr}},
    {DType::Q4_K, {ActKind::Q8_K, gemmk<dec_q4_k, q4_k::kBytes>, nullptr}},
    {DType::Q5_K, {ActKind::Q8_K, gemmk<dec_q5_k, q5_k::kBytes>, nullptr}},
    {DType::Q6_K, {ActKind::Q8_K, gemmk<dec_q6_k, q6_k::kBytes>, nullptr}},
    {DType::IQ4_XS, {ActKind::Q8_K, gemmk<dec_iq4_xs, iq4_xs::kBytes>, nullptr}},
    {DType::MXFP4, {ActKind::Q8_0, gemm32<dec_mxfp4, mxfp4::kBytes>, nullptr}},
    {DType::IQ2_XXS, {ActKind::Q8_K, gemmk<dec_levels<Iq2XxsLevels>, iq2_xxs::kBytes>, nullptr}},
    {DType::IQ2_XS, {ActKind::Q8_K, gemmk<dec_levels<Iq2XsLevels>, iq2_xs::kBytes>, nullptr}},
    {DType::IQ2_S, {ActKind::Q8_K, gemmk<dec_levels<Iq2SLevels>, iq2_s::kBytes>, nullptr}},
    {DType::IQ3_XXS, {ActKind::Q8_K, gemmk<dec_levels<Iq3XxsLevels>, iq3_xxs::kBytes>, nullptr}},
    {DType::IQ3_S, {ActKind::Q8_K, gemmk<dec_levels<Iq3SLevels>, iq3_s::kBytes>, nullptr}},
    {DType::IQ1_S, {ActKind::Q8_K, gemmk<dec_levels<Iq1SLevels>, iq1_s::kBytes>, nullptr}},
    {DType::IQ1_M, {ActKind::Q8_K, gemmk<dec_levels<Iq1MLevels>, iq1_m::kBytes>, nullptr}},
    {DType::TQ2_0, {ActKind::Q8_K, gemmk<dec_levels<Tq2Levels>, tq2_0::kBytes>, nullptr}},
};

}  // namespace

const QGemm* qgemm_scalar(DType type) {
  for (const Entry& e : kEntries)
    if (e.type == type) return &e.k;
  return nullptr;
}

bool cpu_has_avx512_vnni() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512vnni");
  return yes;
}

const QGemm* qgemm_best(DType type) {
  if (cpu_has_avx512_vnni())
    if (const QGemm* k = qgemm_vnni(type)) return k;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c"))
    if (const QGemm* k = qgemm_avx2(type)) return k;
  return qgemm_scalar(type);
}

}  // namespace hostlm::cpu::quants
