// The reference quantizers, one block at a time. Every formula keeps ggml's order of
// operations (and this file is built without contraction into fused multiply-adds), since
// the search loops compare errors and a different rounding can pick a different scale.
#include "quantize/block_quant.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "hostlm/error.h"
#include "hostlm/half.h"

namespace hostlm::quantize {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// The IQ4 non-linear codebook.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}
float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Round to nearest (ties to even) through the float adder, as ggml does; |v| < 2^22.
int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &shifted, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// ---------------------------------------------------------------- 32-element blocks

// The value of largest magnitude (the first one on ties), with its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < n; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

void block_q4_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -8;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[16 + j] * id;
    const uint8_t q0 = std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(x0 + 8.5f)));
    const uint8_t q1 = std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(x1 + 8.5f)));
    b[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void block_q4_1(const float* x, uint8_t* b) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 15;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  put_f16(b + 2, min);
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const uint8_t q0 = std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(x0 + 0.5f)));
    const uint8_t q1 = std::min<uint8_t>(15, static_cast<uint8_t>(static_cast<int8_t>(x1 + 0.5f)));
    b[4 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void block_q5_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -16;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = x[j] * id, x1 = x[16 + j] * id;
    const uint8_t q0 = std::min<uint8_t>(31, static_cast<uint8_t>(static_cast<int8_t>(x0 + 16.5f)));
    const uint8_t q1 = std::min<uint8_t>(31, static_cast<uint8_t>(static_cast<int8_t>(x1 + 16.5f)));
    b[6 + j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  std::memcpy(b + 2, &qh, 4);
}

void block_q5_1(const float* x, uint8_t* b) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 31;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  put_f16(b + 2, min);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[16 + j] - min) * id;
    const auto q0 = static_cast<uint8_t>(x0 + 0.5f);
    const auto q1 = static_cast<uint8_t>(x1 + 0.5f);
    b[8 + j] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
    qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(b + 4, &qh, 4);
}

void block_q8_0(const float* x, uint8_t* b) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  for (int j = 0; j < 32; ++j)
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

// MXFP4 (ggml's quantize_row_mxfp4_ref): the E8M0 scale 2^(floor(log2 amax) - 2), each value
// the nearest of the doubled E2M1 codes times half of it (the first of equals).
constexpr int8_t kMxfp4Codes[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void block_mxfp4(const float* x, uint8_t* b) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  // ggml converts floor(log2f(amax)) + 125 to a byte; values past a byte's range (subnormal
  // or near-infinite blocks) are clamped here instead of wrapping.
  const float e_real = amax > 0.f ? std::floor(std::log2(amax)) - 2.f + 127.f : 0.f;
  const auto e = static_cast<uint8_t>(std::clamp(e_real, 0.f, 255.f));
  const float d = e8m0_half_to_f32(e);
  b[0] = e;
  auto best = [&](float v) {
    int best_index = 0;
    float best_err = std::fabs(static_cast<float>(kMxfp4Codes[0]) * d - v);
    for (int i = 1; i < 16; ++i) {
      const float err = std::fabs(static_cast<float>(kMxfp4Codes[i]) * d - v);
      if (err < best_err) {
        best_index = i;
        best_err = err;
      }
    }
    return static_cast<uint8_t>(best_index);
  };
  for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(best(x[j]) | best(x[16 + j]) << 4);
}

// ---------------------------------------------------------------- K-quant searches

// Scale and min for n values with levels 0..nmax, minimizing the weighted squared error
// over a sweep of candidate scales (ggml's make_qkx2_quants). Returns the scale; *neg_min
// receives -min (>= 0).
float search_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// Symmetric scale for n values with levels -nmax..nmax-1, weighted by x^2, over a sweep of
// 19 candidate scales (ggml's make_qx_quants with rmse_type 1). L receives level + nmax.
float search_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q4_K and Q5_K share the scale search and the 12-byte packing of 6-bit scales and mins.
void pack_k4_scales(const float* scales, const float* mins, uint8_t* packed, float& d,
                    float& dmin) {
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    // Through uint8_t first, as ggml does (a negative rounds to a large byte, then 63).
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  d = max_scale / 63.f;
  dmin = max_min / 63.f;
}

void unpack_k4_scale(const uint8_t* s, int j, int& sc, int& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Levels 0..nmax of a 256-element super-block with per-32 scales and mins (Q4_K: 15,
// Q5_K: 31). Writes d, dmin and the packed scales at b; returns the levels in L.
void k4_levels(const float* x, int nmax, float rmin, int nstep, uint8_t* b, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  uint8_t Laux[32];
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = search_scale_min(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 0.1f, nstep);
  }
  float d, dmin;
  pack_k4_scales(scales, mins, b + 4, d, dmin);
  put_f16(b, d);
  put_f16(b + 2, dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_k4_scale(b + 4, j, sc, m);
    const float dj = f16_at(b) * sc;
    if (dj == 0.f) continue;
    const float dm = f16_at(b + 2) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / dj);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

void block_q4_k(const float* x, uint8_t* b) {
  uint8_t L[256];
  k4_levels(x, 15, -1.f, 20, b, L);
  uint8_t* q = b + 16;
  for (int j = 0; j < 256; j += 64, q += 32)
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
}

void block_q5_k(const float* x, uint8_t* b) {
  uint8_t L[256];
  k4_levels(x, 31, -0.5f, 15, b, L);
  uint8_t* qh = b + 16;
  uint8_t* ql = b + 48;
  std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < 256; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
}

void block_q6_k(const float* x, uint8_t* b) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = search_scale_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
    if (std::fabs(scales[ib]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(b, 0, 210);
    return;
  }
  const float iscale = -128.f / max_scale;
  put_f16(b + 208, 1 / iscale);
  auto* sc = reinterpret_cast<int8_t*>(b + 192);
  for (int ib = 0; ib < 16; ++ib)
    sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < 16; ++j) {
    const float d = f16_at(b + 208) * sc[j];
    if (d == 0.f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int j = 0; j < 256; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const int q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
}

// ---------------------------------------------------------------- IQ4 (non-linear)

// Index of the codebook value nearest to v (the lower one on ties).
int nearest_iq4(float v) {
  if (v <= kIq4Values[0]) return 0;
  if (v >= kIq4Values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < kIq4Values[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - kIq4Values[hi - 1] < kIq4Values[hi] - v ? hi - 1 : hi;
}

// A super-block of `n` values in 32-element sub-blocks (n = 32: IQ4_NL, 256: IQ4_XS), with
// the x^2-weighted scale search over 15 candidates per sub-block (ggml's
// quantize_row_iq4_nl_impl without an importance matrix, ntry 7). Writes d, the sub-block
// scales (IQ4_XS) and the packed nibbles.
void iq4_super_block(const float* x, int n, uint8_t* d_out, uint8_t* scales_h, uint8_t* scales_l,
                     uint8_t* q4) {
  constexpr int kTry = 7;
  const int nb = n / 32;
  uint8_t L[256];
  float scales[8], weight[32];
  std::memset(q4, 0, n / 2);
  put_f16(d_out, 0.f);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < nb; ++ib) {
    const float* xb = x + 32 * ib;
    uint8_t* Lb = L + 32 * ib;
    for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / kIq4Values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = nearest_iq4(id * xb[j]);
      Lb[j] = static_cast<uint8_t>(l);
      const float q = kIq4Values[l];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kTry; itry <= kTry; ++itry) {
      id = (itry + kIq4Values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = kIq4Values[nearest_iq4(id * xb[j])];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    if (std::fabs(d) > amax_scale) {
      amax_scale = std::fabs(d);
      max_scale = d;
    }
  }
  if (nb > 1) {
    uint16_t sh = 0;
    const float d = -max_scale / 32;
    put_f16(d_out, d);
    const float id = d != 0.f ? 1 / d : 0.f;
    for (int ib = 0; ib < nb; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = std::max(-32, std::min(31, l));
      const float dl = d * l;
      const float idl = dl != 0.f ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j)
        L[32 * ib + j] = static_cast<uint8_t>(nearest_iq4(idl * x[32 * ib + j]));
      l += 32;
      const auto l_l = static_cast<uint8_t>(l & 0xf), l_h = static_cast<uint8_t>(l >> 4);
      if (ib % 2 == 0) {
        scales_l[ib / 2] = l_l;
      } else {
        scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
      }
      sh = static_cast<uint16_t>(sh | (l_h << (2 * (ib % 8))));
    }
    std::memcpy(scales_h, &sh, 2);
  } else {
    put_f16(d_out, scales[0]);
    const float id = scales[0] != 0.f ? 1 / scales[0] : 0;
    for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(nearest_iq4(id * x[j]));
  }
  for (int i = 0; i < n / 32; ++i)
    for (int j = 0; j < 16; ++j)
      q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void block_iq4_nl(const float* x, uint8_t* b) {
  iq4_super_block(x, 32, b, nullptr, nullptr, b + 2);
}
void block_iq4_xs(const float* x, uint8_t* b) { iq4_super_block(x, 256, b, b + 2, b + 4, b + 8); }

using BlockFn = void (*)(const float*, uint8_t*);

BlockFn block_fn(DType type) {
  switch (type) {
    case DType::Q4_0:
      return block_q4_0;
    case DType::Q4_1:
      return block_q4_1;
    case DType::Q5_0:
      return block_q5_0;
    case DType::Q5_1:
      return block_q5_1;
    case DType::Q8_0:
      return block_q8_0;
    case DType::Q4_K:
      return block_q4_k;
    case DType::Q5_K:
      return block_q5_k;
    case DType::Q6_K:
      return block_q6_k;
    case DType::IQ4_NL:
      return block_iq4_nl;
    case DType::IQ4_XS:
      return block_iq4_xs;
    case DType::MXFP4:
      return block_mxfp4;
    default:
      return nullptr;
  }
}

}  // namespace

bool can_quantize(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         block_fn(type) != nullptr;
}

size_t quantize_rows(DType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row) {
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t n = n_rows * n_per_row;
  switch (type) {
    case DType::F32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return static_cast<size_t>(n) * 4;
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == DType::F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return static_cast<size_t>(n) * 2;
    default:
      break;
  }
  const BlockFn fn = block_fn(type);
  if (fn == nullptr)
    throw Error("quantizing to " + std::string(dtype_name(type)) + " is not supported");
  const DTypeTraits tr = dtype_traits(type);
  if (n_per_row % tr.block_size != 0)
    throw Error("rows of " + std::to_string(n_per_row) + " values are not a whole number of " +
                std::string(dtype_name(type)) + " blocks");
  const int64_t n_blocks = n / tr.block_size;
  for (int64_t i = 0; i < n_blocks; ++i) fn(src + i * tr.block_size, out + i * tr.block_bytes);
  return static_cast<size_t>(n_blocks) * tr.block_bytes;
}

}  // namespace hostlm::quantize
