#include "cpu/paged_kv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/half.h"

namespace hostlm::cpu {
namespace {

constexpr int64_t kPage = kKvPageTokens;
constexpr int64_t kQueryTile = 16;
constexpr int64_t kQ8Block = 32;
constexpr size_t kQ8BlockBytes = 34;  // f16 scale, then 32 int8

size_t row_bytes(const KvPages& kv) {
  const int64_t width = kv.n_head_kv * kv.head_dim;
  switch (kv.type) {
    case DType::F32:
      return static_cast<size_t>(width) * 4;
    case DType::F16:
      return static_cast<size_t>(width) * 2;
    case DType::Q8_0:
      return static_cast<size_t>(width / kQ8Block) * kQ8BlockBytes;
    default:
      throw Error("KV pages of type " + std::string(dtype_name(kv.type)));
  }
}

// Byte offset of value `first` (a multiple of 32 for Q8_0) within a row.
size_t offset_in_row(DType type, int64_t first) {
  switch (type) {
    case DType::F32:
      return static_cast<size_t>(first) * 4;
    case DType::F16:
      return static_cast<size_t>(first) * 2;
    default:
      return static_cast<size_t>(first / kQ8Block) * kQ8BlockBytes;
  }
}

// ---- Storing rows --------------------------------------------------------------------------

// The reference Q8_0 quantization (as ggml's quantize_row_q8_0_ref): per block of 32,
// d = max|x| / 127 stored as f16, q = round(x / d) with the unrounded d.
void quantize_q8_0(const float* x, uint8_t* out, int64_t n) {
  for (int64_t b = 0; b < n / kQ8Block; ++b) {
    const float* xb = x + b * kQ8Block;
    uint8_t* ob = out + static_cast<size_t>(b) * kQ8BlockBytes;
    float amax = 0.f;
    for (int64_t i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::abs(xb[i]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(ob, &dh, 2);
    for (int64_t i = 0; i < kQ8Block; ++i)
      ob[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(xb[i] * id)));
  }
}

void store_row(DType type, const float* x, uint8_t* out, int64_t n) {
  switch (type) {
    case DType::F32:
      std::memcpy(out, x, static_cast<size_t>(n) * 4);
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      break;
    default:
      quantize_q8_0(x, out, n);
  }
}

// ---- Loading rows as float32 ---------------------------------------------------------------

#define HOSTLM_AVX2 __attribute__((target("avx2,fma,f16c")))

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}

void load_row_scalar(DType type, const uint8_t* src, float* out, int64_t n) {
  switch (type) {
    case DType::F32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    default:
      for (int64_t b = 0; b < n / kQ8Block; ++b) {
        const uint8_t* blk = src + static_cast<size_t>(b) * kQ8BlockBytes;
        uint16_t dh;
        std::memcpy(&dh, blk, 2);
        const float d = f16_to_f32(dh);
        for (int64_t i = 0; i < kQ8Block; ++i)
          out[b * kQ8Block + i] = d * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
      }
  }
}

HOSTLM_AVX2 void load_row_avx2(DType type, const uint8_t* src, float* out, int64_t n) {
  if (type == DType::F16 && n % 8 == 0) {
    for (int64_t i = 0; i < n; i += 8)
      _mm256_storeu_ps(
          out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
    return;
  }
  if (type == DType::Q8_0) {
    for (int64_t b = 0; b < n / kQ8Block; ++b) {
      const uint8_t* blk = src + static_cast<size_t>(b) * kQ8BlockBytes;
      uint16_t dh;
      std::memcpy(&dh, blk, 2);
      const __m256 d = _mm256_set1_ps(f16_to_f32(dh));
      for (int j = 0; j < 4; ++j) {
        const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + 8 * j));
        const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
        _mm256_storeu_ps(out + b * kQ8Block + 8 * j, _mm256_mul_ps(d, q));
      }
    }
    return;
  }
  load_row_scalar(type, src, out, n);
}

// ---- Attention -----------------------------------------------------------------------------

// One unit of work: query tokens [t0, t1) of one sequence against one KV head.
struct Item {
  int32_t seq, kv_head;
  int64_t t0, t1;
};

// Per-thread buffers, grown to the largest shape once and then reused.
struct Workspace {
  std::vector<float> keys_t;  // [head_dim][kPage]: the page's keys, transposed
  std::vector<float> values;  // [kPage][head_dim], when the page is not float32
  std::vector<float> row;     // one converted key row
  std::vector<float> max, sum, acc;
  void fit(int64_t head_dim, int64_t pairs) {
    const auto grow = [](std::vector<float>& v, int64_t n) {
      if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
    };
    grow(keys_t, head_dim * kPage);
    grow(values, head_dim * kPage);
    grow(row, head_dim);
    grow(max, pairs);
    grow(sum, pairs);
    grow(acc, pairs * head_dim);
  }
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

// The page's rows [0, n) of KV head g as float32: keys transposed into keys_t, values either
// read in place (float32 pages) or converted into `values`. Returns the values' first row and
// sets their row stride.
template <bool kAvx2>
const float* stage_page(const KvPages& kv, int32_t page, int64_t g, int64_t n, Workspace& w,
                        size_t& v_stride) {
  const int64_t hd = kv.head_dim;
  const size_t rb = row_bytes(kv);
  const size_t head_offset = offset_in_row(kv.type, g * hd);
  const auto* kpage = static_cast<const uint8_t*>(kv.k) + kv.page_bytes * static_cast<size_t>(page);
  const auto* vpage = static_cast<const uint8_t*>(kv.v) + kv.page_bytes * static_cast<size_t>(page);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = kpage + rb * static_cast<size_t>(i) + head_offset;
    const float* row = reinterpret_cast<const float*>(src);
    if (kv.type != DType::F32) {
      if constexpr (kAvx2)
        load_row_avx2(kv.type, src, w.row.data(), hd);
      else
        load_row_scalar(kv.type, src, w.row.data(), hd);
      row = w.row.data();
    }
    for (int64_t d = 0; d < hd; ++d) w.keys_t[static_cast<size_t>(d * kPage + i)] = row[d];
  }
  // Columns past n are never read unmasked; keep them finite so no NaN meets a mask.
  for (int64_t d = 0; d < hd && n < kPage; ++d)
    std::fill_n(w.keys_t.begin() + d * kPage + n, kPage - n, 0.f);
  if (kv.type == DType::F32) {
    v_stride = rb / sizeof(float);
    return reinterpret_cast<const float*>(vpage + head_offset);
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = vpage + rb * static_cast<size_t>(i) + head_offset;
    float* dst = w.values.data() + i * hd;
    if constexpr (kAvx2)
      load_row_avx2(kv.type, src, dst, hd);
    else
      load_row_scalar(kv.type, src, dst, hd);
  }
  v_stride = static_cast<size_t>(hd);
  return w.values.data();
}

HOSTLM_AVX2 inline float hsum8(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

HOSTLM_AVX2 inline float hmax8(__m256 v) {
  __m128 lo = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_max_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// exp(x) for x <= 0 (Cephes' expf polynomial, within 2 ulp); -inf and x < -87 give ~0.
HOSTLM_AVX2 inline __m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// Scores of the page's 32 keys for one query head: q . keys_t[:, i], in order over d.
struct Scores {
  __m256 s[4];
};

// Up to kHeads query heads at once (the heads of one KV group share the staged keys): each
// head's sums are separate chains, so its result is the same however many go together.
template <int kHeads>
HOSTLM_AVX2 inline void score_page(const float* const* q, const float* keys_t, int64_t hd,
                                   Scores* out) {
  __m256 s[kHeads][4];
  for (int h = 0; h < kHeads; ++h)
    for (int j = 0; j < 4; ++j) s[h][j] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; ++d) {
    const float* kr = keys_t + d * kPage;
    const __m256 k0 = _mm256_loadu_ps(kr), k1 = _mm256_loadu_ps(kr + 8);
    const __m256 k2 = _mm256_loadu_ps(kr + 16), k3 = _mm256_loadu_ps(kr + 24);
    for (int h = 0; h < kHeads; ++h) {
      const __m256 qd = _mm256_broadcast_ss(q[h] + d);
      s[h][0] = _mm256_fmadd_ps(qd, k0, s[h][0]);
      s[h][1] = _mm256_fmadd_ps(qd, k1, s[h][1]);
      s[h][2] = _mm256_fmadd_ps(qd, k2, s[h][2]);
      s[h][3] = _mm256_fmadd_ps(qd, k3, s[h][3]);
    }
  }
  for (int h = 0; h < kHeads; ++h)
    for (int j = 0; j < 4; ++j) out[h].s[j] = s[h][j];
}

// The online-softmax step for one head: scaled, masked scores become weights p[32] (0 past
// `visible`); max and sum move on; returns the factor the accumulator must be scaled by.
HOSTLM_AVX2 inline __m256 softmax_step(Scores& sc, int64_t visible, float scale, float& max,
                                       float& sum, float* p) {
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 limit = _mm256_set1_ps(static_cast<float>(visible));
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 valid[4];
  __m256 page_max = neg_inf;
  for (int j = 0; j < 4; ++j) {
    valid[j] = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(8.f * j)), limit, _CMP_LT_OQ);
    sc.s[j] = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(sc.s[j], _mm256_set1_ps(scale)), valid[j]);
    page_max = _mm256_max_ps(page_max, sc.s[j]);
  }
  const float new_max = std::max(max, hmax8(page_max));
  const __m256 m = _mm256_set1_ps(new_max);
  // exp(max - new_max): 0 on the first page (max = -inf), 1 while the max stays.
  const __m256 correction =
      max == -INFINITY ? _mm256_setzero_ps() : exp_nonpositive(_mm256_set1_ps(max - new_max));
  __m256 total = _mm256_setzero_ps();
  for (int j = 0; j < 4; ++j) {
    const __m256 e = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(sc.s[j], m)), valid[j]);
    _mm256_store_ps(p + 8 * j, e);
    total = _mm256_add_ps(total, e);
  }
  sum = sum * _mm256_cvtss_f32(correction) + hsum8(total);
  max = new_max;
  return correction;
}

// For kHeads heads: acc[h][0 .. 8 * NV) = acc * correction + sum over keys i < visible of
// p[h][i] * v[i], each element a chain over the keys in order.
template <int kHeads, int NV>
HOSTLM_AVX2 inline void accumulate_values(const float* const* p, const float* v, size_t v_stride,
                                          int64_t visible, const __m256* correction,
                                          float* const* acc, int64_t d) {
  __m256 a[kHeads][NV];
  for (int h = 0; h < kHeads; ++h)
    for (int j = 0; j < NV; ++j)
      a[h][j] = _mm256_mul_ps(_mm256_loadu_ps(acc[h] + d + 8 * j), correction[h]);
  for (int64_t i = 0; i < visible; ++i) {
    const float* vi = v + v_stride * static_cast<size_t>(i) + d;
    __m256 vv[NV];
    for (int j = 0; j < NV; ++j) vv[j] = _mm256_loadu_ps(vi + 8 * j);
    for (int h = 0; h < kHeads; ++h) {
      const __m256 pi = _mm256_broadcast_ss(p[h] + i);
      for (int j = 0; j < NV; ++j) a[h][j] = _mm256_fmadd_ps(pi, vv[j], a[h][j]);
    }
  }
  for (int h = 0; h < kHeads; ++h)
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(acc[h] + d + 8 * j, a[h][j]);
}

template <int kHeads>
HOSTLM_AVX2 void accumulate_all(const float* const* p, const float* v, size_t v_stride, int64_t hd,
                                int64_t visible, const __m256* correction, float* const* acc) {
  // Four vectors per head and step keep 2 x 4 accumulators plus the loads in registers.
  int64_t d = 0;
  for (; d + 32 <= hd; d += 32)
    accumulate_values<kHeads, 4>(p, v, v_stride, visible, correction, acc, d);
  switch ((hd - d) / 8) {
    case 3:
      accumulate_values<kHeads, 3>(p, v, v_stride, visible, correction, acc, d);
      break;
    case 2:
      accumulate_values<kHeads, 2>(p, v, v_stride, visible, correction, acc, d);
      break;
    case 1:
      accumulate_values<kHeads, 1>(p, v, v_stride, visible, correction, acc, d);
      break;
    default:
      break;
  }
}

// kHeads (query, head) pairs of one query against one staged page.
template <int kHeads>
HOSTLM_AVX2 void update_avx2(const float* const* q, const float* keys_t, const float* v,
                             size_t v_stride, int64_t hd, int64_t visible, float scale, float* max,
                             float* sum, float* const* acc) {
  Scores sc[kHeads];
  score_page<kHeads>(q, keys_t, hd, sc);
  alignas(32) float p[kHeads][kPage];
  const float* pp[kHeads];
  __m256 correction[kHeads];
  for (int h = 0; h < kHeads; ++h) {
    correction[h] = softmax_step(sc[h], visible, scale, max[h], sum[h], p[h]);
    pp[h] = p[h];
  }
  accumulate_all<kHeads>(pp, v, v_stride, hd, visible, correction, acc);
}

void update_scalar(const float* q, const float* keys_t, const float* v, size_t v_stride, int64_t hd,
                   int64_t visible, float scale, float& max, float& sum, float* acc) {
  float s[kPage];
  float page_max = -INFINITY;
  for (int64_t i = 0; i < visible; ++i) {
    float dot = 0.f;
    for (int64_t d = 0; d < hd; ++d) dot += q[d] * keys_t[d * kPage + i];
    s[i] = dot * scale;
    page_max = std::max(page_max, s[i]);
  }
  const float new_max = std::max(max, page_max);
  const float correction = std::exp(max - new_max);
  float total = 0.f;
  for (int64_t i = 0; i < visible; ++i) {
    s[i] = std::exp(s[i] - new_max);
    total += s[i];
  }
  sum = sum * correction + total;
  max = new_max;
  for (int64_t d = 0; d < hd; ++d) {
    float a = acc[d] * correction;
    for (int64_t i = 0; i < visible; ++i) a += s[i] * v[v_stride * i + d];
    acc[d] = a;
  }
}

template <bool kAvx2>
void attend(const Item& it, const PagedSequence& sq, const float* q, size_t q_stride,
            int64_t n_head, float scale, float* out) {
  const KvPages& kv = sq.kv;
  const int64_t hd = kv.head_dim, group = n_head / kv.n_head_kv;
  const int64_t n_q = it.t1 - it.t0, pairs = n_q * group;
  Workspace& w = workspace();
  w.fit(hd, pairs);
  std::fill_n(w.max.begin(), pairs, -INFINITY);
  std::fill_n(w.sum.begin(), pairs, 0.f);
  std::fill_n(w.acc.begin(), pairs * hd, 0.f);
  const int64_t last = sq.n_past + it.t1 - 1;  // the tile's last position
  for (int64_t j = 0; j <= last / kPage; ++j) {
    const int64_t page_start = j * kPage;
    const int64_t n_valid = std::min(kPage, last - page_start + 1);
    size_t v_stride = 0;
    const float* v = stage_page<kAvx2>(kv, sq.pages[j], it.kv_head, n_valid, w, v_stride);
    for (int64_t qi = 0; qi < n_q; ++qi) {
      const int64_t visible = std::min(n_valid, sq.n_past + it.t0 + qi - page_start + 1);
      if (visible <= 0) continue;
      const float* q_row = q + static_cast<size_t>(sq.row + it.t0 + qi) * q_stride;
      if constexpr (kAvx2) {
        // Heads of the group two at a time: twice the independent chains per key loaded.
        for (int64_t hh = 0; hh < group;) {
          const int n = group - hh >= 2 ? 2 : 1;
          const float* qs[2];
          float* accs[2];
          for (int k = 0; k < n; ++k) {
            qs[k] = q_row + (it.kv_head * group + hh + k) * hd;
            accs[k] = w.acc.data() + (qi * group + hh + k) * hd;
          }
          float* mx = w.max.data() + qi * group + hh;
          float* sm = w.sum.data() + qi * group + hh;
          if (n == 2)
            update_avx2<2>(qs, w.keys_t.data(), v, v_stride, hd, visible, scale, mx, sm, accs);
          else
            update_avx2<1>(qs, w.keys_t.data(), v, v_stride, hd, visible, scale, mx, sm, accs);
          hh += n;
        }
      } else {
        for (int64_t hh = 0; hh < group; ++hh) {
          const int64_t h = it.kv_head * group + hh, pair = qi * group + hh;
          update_scalar(q_row + h * hd, w.keys_t.data(), v, v_stride, hd, visible, scale,
                        w.max[pair], w.sum[pair], w.acc.data() + pair * hd);
        }
      }
    }
  }
  for (int64_t qi = 0; qi < n_q; ++qi)
    for (int64_t hh = 0; hh < group; ++hh) {
      const int64_t h = it.kv_head * group + hh, pair = qi * group + hh;
      float* o = out + static_cast<size_t>(sq.row + it.t0 + qi) * n_head * hd + h * hd;
      const float inv = 1.f / w.sum[pair];
      for (int64_t d = 0; d < hd; ++d) o[d] = w.acc[pair * hd + d] * inv;
    }
}

void check(const PagedSequence& s, int64_t n_head) {
  const KvPages& kv = s.kv;
  if (kv.n_head_kv <= 0 || kv.head_dim <= 0 || n_head % kv.n_head_kv != 0)
    throw Error("paged attention: " + std::to_string(n_head) + " query heads cannot share " +
                std::to_string(kv.n_head_kv) + " KV heads");
  if (kv.type == DType::Q8_0 && kv.head_dim % kQ8Block != 0)
    throw Error("paged attention: Q8_0 pages need head_dim a multiple of 32");
  if (!s.pages || s.T < 0 || s.n_past < 0) throw Error("paged attention: bad sequence");
}

}  // namespace

void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) {
  for (const PagedSequence& s : seqs) {
    const int64_t width = s.kv.n_head_kv * s.kv.head_dim;
    const size_t rb = row_bytes(s.kv);
    for (int64_t t = 0; t < s.T; ++t) {
      const int64_t pos = s.n_past + t;
      const size_t at = s.kv.page_bytes * static_cast<size_t>(s.pages[pos / kPage]) +
                        rb * static_cast<size_t>(pos % kPage);
      const size_t src = static_cast<size_t>((s.row + t) * width);
      store_row(s.kv.type, k + src, static_cast<uint8_t*>(s.kv.k) + at, width);
      store_row(s.kv.type, v + src, static_cast<uint8_t*>(s.kv.v) + at, width);
    }
  }
}

void paged_attention(ThreadPool& pool, std::span<const PagedSequence> seqs, const float* q,
                     size_t q_stride, int64_t n_head, float scale, float* out) {
  // The list of work items lives on the calling thread and keeps its capacity.
  thread_local std::vector<Item> own_items;
  std::vector<Item>& items = own_items;  // a thread_local named in the lambda would be the worker's
  items.clear();
  for (size_t s = 0; s < seqs.size(); ++s) {
    check(seqs[s], n_head);
    // Last tiles first: they see the most keys, and the pool hands out pieces in order.
    for (int64_t t1 = seqs[s].T; t1 > 0; t1 -= kQueryTile)
      for (int64_t g = 0; g < seqs[s].kv.n_head_kv; ++g)
        items.push_back({static_cast<int32_t>(s), static_cast<int32_t>(g),
                         std::max<int64_t>(0, t1 - kQueryTile), t1});
  }
  const bool avx2 = has_avx2();
  pool.parallel_for(static_cast<int64_t>(items.size()), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const Item& it = items[static_cast<size_t>(i)];
      const PagedSequence& sq = seqs[static_cast<size_t>(it.seq)];
      if (avx2 && sq.kv.head_dim % 8 == 0)
        attend<true>(it, sq, q, q_stride, n_head, scale, out);
      else
        attend<false>(it, sq, q, q_stride, n_head, scale, out);
    }
  });
}

}  // namespace hostlm::cpu
