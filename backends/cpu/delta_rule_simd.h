// The gated delta rule's row kernel, written once for two instruction sets:
// delta_rule_avx2.cpp and delta_rule_avx512.cpp include this file inside their own anonymous
// namespace, under their own `#pragma GCC target`, after defining a vector traits struct `V`:
//   using Vec; kLanes (floats per vector); kRows (state rows per step, 8 or 16: as many as
//   the registers hold); zero(); set1(f); load(p); store(p, v); mul; fmadd(a, b, c) = a*b+c;
//   __m256 reduce8(const Vec a[8])   lane r = the sum of all lanes of a[r]
// Headers it needs, included by the includer: <immintrin.h>, "cpu/delta_rule.h".
//
// One step takes token t through R state rows (lanes run along dk):
//   kv[r] = S[r] . k                       (R dot products, reduced 8 at a time)
//   d[r]  = beta * (v[r] - decay * kv[r])  (exp(g) applied to the sum, not to S)
//   S[r]  = decay * S[r] + d[r] * k;  o[r] = S[r] . q
// A group of rows stays in L1 for the whole chunk of tokens.

// Lanes r < R of x into p.
template <int R>
inline void store_lanes(float* p, __m256 x) {
  if constexpr (R == 8) {
    _mm256_storeu_ps(p, x);
  } else {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, x);
    for (int r = 0; r < R; ++r) p[r] = tmp[r];
  }
}

template <int R>
inline __m256 load_lanes(const float* p) {
  if constexpr (R == 8) {
    return _mm256_loadu_ps(p);
  } else {
    alignas(32) float tmp[8] = {};
    for (int r = 0; r < R; ++r) tmp[r] = p[r];
    return _mm256_load_ps(tmp);
  }
}

// delta[r] = beta * (v[r] - decay * (sum of acc[r])) for the rows r < R of one half (8 rows).
template <int R>
inline void half_delta(const typename V::Vec* acc, const float* v, float beta, float decay,
                       float* delta) {
  const __m256 d =
      _mm256_mul_ps(_mm256_set1_ps(beta),
                    _mm256_fnmadd_ps(_mm256_set1_ps(decay), V::reduce8(acc), load_lanes<R>(v)));
  _mm256_store_ps(delta, d);
}

// Token t of the chunk on R <= 16 rows starting at row c0.
template <int R>
inline void token_step(const hostlm::cpu::DeltaChunk& c, int64_t t, float* S, int64_t c0) {
  using Vec = typename V::Vec;
  constexpr int kAcc = R > 8 ? 16 : 8;  // whole halves, so reduce8 always sees 8 vectors
  const int64_t dk = c.dk;
  const float* k = c.k + t * dk;
  const float* q = c.q + t * dk;
  Vec acc[kAcc];
#pragma GCC unroll 16
  for (int r = 0; r < kAcc; ++r) acc[r] = V::zero();
  for (int64_t i = 0; i < dk; i += V::kLanes) {
    const Vec kv = V::load(k + i);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r] = V::fmadd(V::load(S + r * dk + i), kv, acc[r]);
  }
  const float* v = c.v + static_cast<size_t>(t) * c.v_stride + c0;
  alignas(32) float delta[kAcc];
  half_delta<(R < 8 ? R : 8)>(acc, v, c.beta[t], c.decay[t], delta);
  if constexpr (R > 8) half_delta<R - 8>(acc + 8, v + 8, c.beta[t], c.decay[t], delta + 8);
  const Vec decay = V::set1(c.decay[t]);
#pragma GCC unroll 16
  for (int r = 0; r < kAcc; ++r) acc[r] = V::zero();
  for (int64_t i = 0; i < dk; i += V::kLanes) {
    const Vec kv = V::load(k + i);
    const Vec qv = V::load(q + i);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      float* s = S + r * dk + i;
      const Vec x = V::fmadd(kv, V::set1(delta[r]), V::mul(V::load(s), decay));
      V::store(s, x);
      acc[r] = V::fmadd(x, qv, acc[r]);
    }
  }
  float* o = c.o + static_cast<size_t>(t) * c.o_stride + c0;
  store_lanes<(R < 8 ? R : 8)>(o, V::reduce8(acc));
  if constexpr (R > 8) store_lanes<R - 8>(o + 8, V::reduce8(acc + 8));
}

// One token depends on the previous one's rows through a chain of reductions, so a lone
// block of rows runs at the latency of that chain. A group of blocks (32 rows, 16 KiB for
// dk = 128) takes each token in turn: their chains are independent and overlap.
constexpr int kGroupRows = 32;

template <int R>
void rows_tail(const hostlm::cpu::DeltaChunk& c, float* S, int64_t c0) {
  for (int64_t t = 0; t < c.n; ++t) token_step<R>(c, t, S + c0 * c.dk, c0);
}

void rows_all(const hostlm::cpu::DeltaChunk& c, float* S) {
  constexpr int kRows = V::kRows, kGroup = kGroupRows / kRows;
  int64_t c0 = 0;
  for (; c0 + kGroupRows <= c.dv; c0 += kGroupRows)
    for (int64_t t = 0; t < c.n; ++t)
#pragma GCC unroll 4
      for (int b = 0; b < kGroup; ++b)
        token_step<kRows>(c, t, S + (c0 + kRows * b) * c.dk, c0 + kRows * b);
  for (; c0 + 8 <= c.dv; c0 += 8) rows_tail<8>(c, S, c0);
  switch (c.dv - c0) {
    case 7:
      rows_tail<7>(c, S, c0);
      break;
    case 6:
      rows_tail<6>(c, S, c0);
      break;
    case 5:
      rows_tail<5>(c, S, c0);
      break;
    case 4:
      rows_tail<4>(c, S, c0);
      break;
    case 3:
      rows_tail<3>(c, S, c0);
      break;
    case 2:
      rows_tail<2>(c, S, c0);
      break;
    case 1:
      rows_tail<1>(c, S, c0);
      break;
    default:
      break;
  }
}
