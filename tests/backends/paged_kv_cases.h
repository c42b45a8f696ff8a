// Shared by the CPU and CUDA paged-KV tests: a batch of sequences whose keys and values sit
// in scattered pages of a pool, and a plain double-precision reference of causal attention
// over the same keys and values rounded to the page type.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hostlm/half.h"
#include "hostlm/kv_cache.h"
#include "hostlm/ops.h"

namespace hostlm::testing {

struct PagedCase {
  DType type;
  int64_t n_head, n_head_kv, head_dim;
  std::string name;
};

inline std::vector<PagedCase> paged_cases() {
  return {{DType::F32, 4, 2, 32, "f32_gqa2_hd32"},    {DType::F16, 4, 2, 32, "f16_gqa2_hd32"},
          {DType::Q8_0, 4, 2, 32, "q8_0_gqa2_hd32"},  {DType::F16, 8, 2, 256, "f16_gqa4_hd256"},
          {DType::Q8_0, 8, 2, 64, "q8_0_gqa4_hd64"},  {DType::F32, 3, 3, 40, "f32_mha_hd40"},
          {DType::F32, 2, 1, 128, "f32_gqa2_hd128"},  {DType::F16, 12, 2, 256, "f16_gqa6_hd256"},
          {DType::Q8_0, 6, 2, 128, "q8_0_gqa3_hd128"}};
}

// Three sequences in one batch: a prompt from scratch across pages, a single decode token
// after a partial page, and a chunk after several pages.
struct PagedScenario {
  PagedCase c;
  CacheLayout layout;
  std::vector<int64_t> n_past = {0, 45, 100}, T = {70, 1, 37};
  std::vector<std::vector<int32_t>> tables;      // scattered page ids
  std::vector<std::vector<float>> keys, values;  // per sequence, every token's [width]
  std::vector<float> q;                          // [rows, n_head * head_dim]
  int64_t rows = 0;

  int64_t width() const { return c.n_head_kv * c.head_dim; }
  int64_t row_of(size_t s) const {
    return std::accumulate(T.begin(), T.begin() + static_cast<int64_t>(s), int64_t{0});
  }
};

constexpr int64_t kScenarioPages = 48;

// The default batch, or sequences of the given cached and new lengths over `pages` pages.
inline PagedScenario make_scenario(const PagedCase& c, uint32_t seed,
                                   std::vector<int64_t> n_past = {0, 45, 100},
                                   std::vector<int64_t> T = {70, 1, 37},
                                   int64_t pages = kScenarioPages) {
  PagedScenario sc;
  sc.c = c;
  sc.n_past = std::move(n_past);
  sc.T = std::move(T);
  sc.layout.n_kv_layers = 1;
  sc.layout.n_head_kv = c.n_head_kv;
  sc.layout.head_dim = c.head_dim;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<int32_t> ids(static_cast<size_t>(pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  for (size_t s = 0; s < sc.T.size(); ++s) {
    const int64_t n = sc.n_past[s] + sc.T[s];
    std::vector<int32_t> table;
    for (int64_t p = 0; p < (n + kKvPageTokens - 1) / kKvPageTokens; ++p)
      table.push_back(ids[next++]);
    sc.tables.push_back(table);
    std::vector<float> k(static_cast<size_t>(n * sc.width())), v(k.size());
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    sc.keys.push_back(k);
    sc.values.push_back(v);
    sc.rows += sc.T[s];
  }
  sc.q.resize(static_cast<size_t>(sc.rows * c.n_head * c.head_dim));
  for (float& x : sc.q) x = dist(rng);
  return sc;
}

inline std::unique_ptr<Buffer> on_backend(Backend& be, const std::vector<float>& host) {
  auto b = be.alloc(std::max<size_t>(host.size(), 1));
  if (!host.empty()) be.upload(b->data(), host.data(), host.size());
  return b;
}

// Stores every sequence's earlier tokens (in two uneven calls each), then all new tokens in
// one batched call; returns the batch of new rows.
inline std::vector<PagedSequence> fill_pages(Backend& be, KvPagePool& pool,
                                             const PagedScenario& sc) {
  const int64_t w = sc.width();
  auto slice = [&](const std::vector<float>& all, int64_t from, int64_t n) {
    return std::vector<float>(all.begin() + from * w, all.begin() + (from + n) * w);
  };
  for (size_t s = 0; s < sc.T.size(); ++s) {
    const int64_t past = sc.n_past[s], split = past / 3;
    for (auto [from, n] : {std::pair{int64_t{0}, split}, std::pair{split, past - split}}) {
      if (n == 0) continue;
      PagedSequence p{pool.layer(0), sc.tables[s].data(), 0, n, from};
      auto k = on_backend(be, slice(sc.keys[s], from, n));
      auto v = on_backend(be, slice(sc.values[s], from, n));
      be.kv_store(std::span(&p, 1), k->data(), v->data());
    }
  }
  std::vector<PagedSequence> batch;
  std::vector<float> k_new, v_new;
  for (size_t s = 0; s < sc.T.size(); ++s) {
    batch.push_back({pool.layer(0), sc.tables[s].data(), sc.row_of(s), sc.T[s], sc.n_past[s]});
    const auto k = slice(sc.keys[s], sc.n_past[s], sc.T[s]);
    const auto v = slice(sc.values[s], sc.n_past[s], sc.T[s]);
    k_new.insert(k_new.end(), k.begin(), k.end());
    v_new.insert(v_new.end(), v.begin(), v.end());
  }
  auto k = on_backend(be, k_new), v = on_backend(be, v_new);
  be.kv_store(batch, k->data(), v->data());
  return batch;
}

// `x` as the page type would give it back: f16 rounding, or Q8_0's per-32 scale (max|x|/127
// stored as f16, values round(x * 127 / max|x|)).
inline std::vector<float> rounded(DType type, std::vector<float> x) {
  if (type == DType::F16)
    for (float& f : x) f = f16_to_f32(f32_to_f16(f));
  if (type == DType::Q8_0)
    for (size_t b = 0; b < x.size(); b += 32) {
      float amax = 0;
      for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::abs(x[i]));
      const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
      const float dq = f16_to_f32(f32_to_f16(d));
      for (size_t i = b; i < b + 32; ++i) x[i] = dq * std::round(x[i] * id);
    }
  return x;
}

// out [rows, n_head * head_dim] in double precision.
inline std::vector<double> reference_attention(const PagedScenario& sc) {
  const PagedCase& c = sc.c;
  const int64_t w = sc.width(), hd = c.head_dim, group = c.n_head / c.n_head_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> out(static_cast<size_t>(sc.rows * c.n_head * hd));
  for (size_t s = 0; s < sc.T.size(); ++s) {
    const auto k = rounded(c.type, sc.keys[s]), v = rounded(c.type, sc.values[s]);
    for (int64_t t = 0; t < sc.T[s]; ++t) {
      const int64_t row = sc.row_of(s) + t, visible = sc.n_past[s] + t + 1;
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t g = h / group;
        std::vector<double> p(static_cast<size_t>(visible));
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += double{sc.q[static_cast<size_t>((row * c.n_head + h) * hd + d)]} *
                   k[static_cast<size_t>(j * w + g * hd + d)];
          p[static_cast<size_t>(j)] = dot * scale;
          top = std::max(top, p[static_cast<size_t>(j)]);
        }
        for (double& x : p) sum += (x = std::exp(x - top));
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < visible; ++j)
            acc += p[static_cast<size_t>(j)] * v[static_cast<size_t>(j * w + g * hd + d)];
          out[static_cast<size_t>((row * c.n_head + h) * hd + d)] = acc / sum;
        }
      }
    }
  }
  return out;
}

}  // namespace hostlm::testing
