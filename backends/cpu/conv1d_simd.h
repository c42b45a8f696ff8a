// The conv1d + SiLU output kernel, written once for two instruction sets: conv1d_avx2.cpp
// and conv1d_avx512.cpp include this file inside their own anonymous namespace, under their
// own `#pragma GCC target`, after defining a vector traits struct `V`:
//   using Vec; kLanes (floats per vector); zero(); set1(f); load(p); store(p, v);
//   add; sub; mul; div; min; max; fmadd(a, b, c) = a*b+c; fnmadd(a, b, c) = c-a*b;
//   gather(p, stride): lane i = p[i * stride];
//   transpose4(p, out[4]): lane i of out[r] = p[4 * i + r];
//   round(v): to the nearest integer;
//   pow2n(p, n): p * 2^n for integral n in [-150, 128], rounded once (so overflow gives
//   inf and tiny results subnormals, as expf does).
// Headers it needs, included by the includer: <immintrin.h>, "cpu/conv1d.h".
//
// Lanes run along channels; a token's K input rows are contiguous in memory, so each tap of
// a vector of channels is one load. The products are added in the reference's order, one
// rounding each (the file set is built with -ffp-contract=off).

using Vec = V::Vec;

// exp(-s) by range reduction: n = round(-s / ln 2), r = -s - n ln 2 (ln 2 in two parts, so r
// carries no extra error), exp(r) on |r| <= ln2 / 2 by a degree-7 polynomial (the Cephes
// expf coefficients, within about 1 ulp), times 2^n. The clamp only keeps n in pow2n's
// range: beyond it the result is inf or 0 anyway.
inline Vec exp_neg(Vec s) {
  const Vec x = V::min(V::max(V::sub(V::zero(), s), V::set1(-104.f)), V::set1(89.f));
  const Vec n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  Vec r = V::fnmadd(n, V::set1(0.693359375f), x);
  r = V::fnmadd(n, V::set1(-2.12194440e-4f), r);
  Vec y = V::set1(1.9875691500e-4f);
  y = V::fmadd(y, r, V::set1(1.3981999507e-3f));
  y = V::fmadd(y, r, V::set1(8.3334519073e-3f));
  y = V::fmadd(y, r, V::set1(4.1665795894e-2f));
  y = V::fmadd(y, r, V::set1(1.6666665459e-1f));
  y = V::fmadd(y, r, V::set1(5.0000001201e-1f));
  y = V::add(V::fmadd(y, V::mul(r, r), r), V::set1(1.f));
  return V::pow2n(y, n);
}

// silu(s) = s / (1 + exp(-s)), as the reference writes it (a NaN sum stays NaN through s).
inline Vec silu_vec(Vec s) { return V::div(s, V::add(V::set1(1.f), exp_neg(s))); }

// sum over r of w[r] * in[r], starting from +0 like the reference (so a -0 product gives +0).
inline Vec taps(const float* const* in, const float* w, int64_t K, int64_t n, int64_t c,
                int64_t cw) {
  Vec acc = V::zero();
  for (int64_t r = 0; r < K; ++r)
    acc = V::add(acc, V::mul(V::load(w + r * n + cw), V::load(in[r] + c)));
  return acc;
}

void outputs(const hostlm::cpu::Conv1dArgs& a, int64_t c0, int64_t c1, float* wt) {
  constexpr int64_t L = V::kLanes;
  const int64_t hist = a.K - 1, n = c1 - c0, full = c0 + n / L * L;
  // The taps transposed, a vector at a time: for a decode step (one token) this costs about
  // as much as the outputs, so it must not go element by element. Four taps (the released
  // kernel size) by a register transpose, which is cheaper than gathers.
  for (int64_t c = c0; c < full; c += L) {
    if (a.K == 4) {
      Vec w4[4];
      V::transpose4(a.weight + c * 4, w4);
      for (int64_t r = 0; r < 4; ++r) V::store(wt + r * n + (c - c0), w4[r]);
    } else {
      for (int64_t r = 0; r < a.K; ++r)
        V::store(wt + r * n + (c - c0), V::gather(a.weight + c * a.K + r, a.K));
    }
  }
  for (int64_t c = full; c < c1; ++c)
    for (int64_t r = 0; r < a.K; ++r) wt[r * n + (c - c0)] = a.weight[c * a.K + r];
  const float* in[hostlm::cpu::kConvMaxTaps];
  for (int64_t t = 0; t < a.T; ++t) {
    for (int64_t r = 0; r < a.K; ++r) {
      const int64_t s = t - hist + r;
      in[r] = s < 0 ? a.state + (hist + s) * a.channels : a.x + s * a.channels;
    }
    float* o = a.out + t * a.channels;
    int64_t c = c0;
    for (; c < full; c += L) V::store(o + c, silu_vec(taps(in, wt, a.K, n, c, c - c0)));
    if (c == c1) continue;
    // The last channels through zero-padded copies: the same lane arithmetic as a full
    // vector, so a channel's bits do not depend on where the range ends.
    alignas(64) float xin[hostlm::cpu::kConvMaxTaps][L] = {},
                      win[hostlm::cpu::kConvMaxTaps][L] = {};
    const int64_t m = c1 - c;
    const float* pad[hostlm::cpu::kConvMaxTaps];
    for (int64_t r = 0; r < a.K; ++r) {
      for (int64_t i = 0; i < m; ++i) {
        xin[r][i] = in[r][c + i];
        win[r][i] = wt[r * n + (c - c0) + i];
      }
      pad[r] = xin[r];
    }
    alignas(64) float res[L];
    V::store(res, silu_vec(taps(pad, win[0], a.K, L, 0, 0)));
    for (int64_t i = 0; i < m; ++i) o[c + i] = res[i];
  }
}
