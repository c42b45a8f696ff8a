// The CUDA backend's tensor-core prefill attention (backends/cuda/flash_prefill.cu) against a
// double-precision reference and against the CUDA-core kernels it stands in for: batches that
// mix sequences of different n_past and T over scattered F16 pages, head_dim 64/128/256 with
// 1 to 8 query heads per KV head, a context of 8K keys, and a timing print of both paths at a
// Qwen3.5-27B-like prefill. HOSTLM_CUDA_FLASH_MIN_ROWS picks the path: 1 sends every
// sequence to the flash kernel, 0 none, unset the default threshold. The flash kernel's split
// over the keys (few blocks, long context: 8K and 20K keys) against the unsplit kernel and the
// reference, and timed after 16K keys; HOSTLM_CUDA_FLASH_SPLITS=N forces N splits, 1 none.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/half.h"
#include "hostlm/kv_cache.h"
#include "hostlm/ops.h"

namespace hostlm {
namespace {

constexpr const char* kMinRowsVar = "HOSTLM_CUDA_FLASH_MIN_ROWS";
constexpr const char* kSplitsVar = "HOSTLM_CUDA_FLASH_SPLITS";
constexpr int64_t kDefaultMinRows = 64;  // backends/cuda/kernels.h: kFlashPrefillMinRows
constexpr double kTolerance = 1e-5;      // of max |out|

using testing::ScopedEnv;

struct Shape {
  int64_t n_head, n_head_kv, head_dim;
  std::string name;
};

void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.name; }

struct SeqSpec {
  int64_t n_past, T;
};

// One attention layer's batch on the GPU: every sequence's keys and values (uniform in
// [-2, 2]) stored through kv_store into scattered pages of an F16 pool whose other bytes are
// NaN, and the queries (uniform in [-q_amp, q_amp]) in rows of q_stride floats whose padding
// is NaN too, so that reading an unwritten slot or a wrong column shows.
struct Problem {
  Shape shape;
  std::vector<SeqSpec> seqs;
  std::unique_ptr<KvPagePool> pool;
  std::vector<std::vector<int32_t>> tables;
  std::vector<std::vector<float>> keys, values;  // [n_past + T, width], rounded to F16
  std::vector<int64_t> first_row;                // of each sequence in the batch
  std::vector<float> q;
  size_t q_stride = 0;
  int64_t rows = 0;
  std::unique_ptr<Buffer> q_dev;
  std::vector<PagedSequence> batch;
  float scale = 0.f;

  int64_t width() const { return shape.n_head_kv * shape.head_dim; }
  int64_t out_width() const { return shape.n_head * shape.head_dim; }
};

std::unique_ptr<Buffer> on_device(Backend& be, const std::vector<float>& host) {
  auto b = be.alloc(std::max<size_t>(host.size(), 1));
  if (!host.empty()) be.upload(b->data(), host.data(), host.size());
  return b;
}

std::unique_ptr<Problem> make_problem(Backend& gpu, const Shape& shape,
                                      const std::vector<SeqSpec>& seqs, uint32_t seed,
                                      float q_amp) {
  auto p = std::make_unique<Problem>();
  p->shape = shape;
  p->seqs = seqs;
  p->scale = 1.f / std::sqrt(static_cast<float>(shape.head_dim));
  CacheLayout layout;
  layout.n_kv_layers = 1;
  layout.n_head_kv = shape.n_head_kv;
  layout.head_dim = shape.head_dim;
  int64_t n_pages = 3;  // a few never used
  for (const SeqSpec& s : seqs) n_pages += (s.n_past + s.T + kKvPageTokens - 1) / kKvPageTokens;
  p->pool = std::make_unique<KvPagePool>(gpu, layout, DType::F16, n_pages);
  const KvPages kv = p->pool->layer(0);
  const size_t pool_floats = p->pool->page_bytes() * static_cast<size_t>(n_pages) / sizeof(float);
  gpu.fill(static_cast<float*>(kv.k), NAN, pool_floats);
  gpu.fill(static_cast<float*>(kv.v), NAN, pool_floats);

  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::vector<int32_t> ids(static_cast<size_t>(n_pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  size_t next = 0;
  const int64_t w = p->width();
  for (const SeqSpec& s : seqs) {
    const int64_t n = s.n_past + s.T;
    std::vector<int32_t> table;
    for (int64_t i = 0; i < (n + kKvPageTokens - 1) / kKvPageTokens; ++i)
      table.push_back(ids[next++]);
    std::vector<float> k(static_cast<size_t>(n * w)), v(k.size());
    for (float& x : k) x = 2.f * unit(rng);
    for (float& x : v) x = 2.f * unit(rng);
    auto k_dev = on_device(gpu, k), v_dev = on_device(gpu, v);
    const PagedSequence all{kv, table.data(), 0, n, 0};
    gpu.kv_store(std::span(&all, 1), k_dev->data(), v_dev->data());
    for (float& x : k) x = f16_to_f32(f32_to_f16(x));
    for (float& x : v) x = f16_to_f32(f32_to_f16(x));
    p->tables.push_back(std::move(table));
    p->keys.push_back(std::move(k));
    p->values.push_back(std::move(v));
    p->first_row.push_back(p->rows);
    p->rows += s.T;
  }
  p->q_stride = static_cast<size_t>(p->out_width() + 24);
  p->q.assign(static_cast<size_t>(p->rows) * p->q_stride, NAN);
  for (int64_t r = 0; r < p->rows; ++r)
    for (int64_t i = 0; i < p->out_width(); ++i)
      p->q[static_cast<size_t>(r) * p->q_stride + static_cast<size_t>(i)] = q_amp * unit(rng);
  p->q_dev = on_device(gpu, p->q);
  for (size_t s = 0; s < seqs.size(); ++s)
    p->batch.push_back({kv, p->tables[s].data(), p->first_row[s], seqs[s].T, seqs[s].n_past});
  return p;
}

// The GPU's attention of the whole batch with the path switches at `min_rows` and `splits`
// (nullopt: unset, the defaults).
std::vector<float> gpu_attention(Backend& gpu, Problem& p,
                                 const std::optional<std::string>& min_rows,
                                 const std::optional<std::string>& splits = std::nullopt) {
  ScopedEnv rows_setting(kMinRowsVar, min_rows);
  ScopedEnv splits_setting(kSplitsVar, splits);
  const size_t n = static_cast<size_t>(p.rows * p.out_width());
  auto out = gpu.alloc(n);
  gpu.paged_attention(p.batch, p.q_dev->data(), p.q_stride, p.shape.n_head, p.scale, out->data());
  std::vector<float> host(n);
  gpu.download(host.data(), out->data(), n);
  return host;
}

// Causal attention of batch row `row` in double precision: [n_head * head_dim].
std::vector<double> reference_row(const Problem& p, int64_t row) {
  size_t s = 0;
  while (row >= p.first_row[s] + p.seqs[s].T) ++s;
  const int64_t t = row - p.first_row[s], visible = p.seqs[s].n_past + t + 1;
  const int64_t hd = p.shape.head_dim, w = p.width(), group = p.shape.n_head / p.shape.n_head_kv;
  const std::vector<float>&k = p.keys[s], &v = p.values[s];
  std::vector<double> out(static_cast<size_t>(p.out_width()));
  std::vector<double> score(static_cast<size_t>(visible));
  for (int64_t h = 0; h < p.shape.n_head; ++h) {
    const float* qh = p.q.data() + static_cast<size_t>(row) * p.q_stride + h * hd;
    const int64_t kvh = h / group;
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < visible; ++j) {
      const float* kj = k.data() + j * w + kvh * hd;
      double dot[4] = {};  // four independent sums (head_dim is a multiple of 4): faster
      for (int64_t d = 0; d < hd; d += 4)
        for (int i = 0; i < 4; ++i) dot[i] += double{qh[d + i]} * kj[d + i];
      score[j] = (dot[0] + dot[1] + dot[2] + dot[3]) * p.scale;
      top = std::max(top, score[j]);
    }
    for (double& x : score) sum += (x = std::exp(x - top));
    std::vector<double> acc(static_cast<size_t>(hd), 0.0);
    for (int64_t j = 0; j < visible; ++j)  // value rows in order: long contexts stay cheap
      for (int64_t d = 0; d < hd; ++d) acc[d] += score[j] * v[j * w + kvh * hd + d];
    for (int64_t d = 0; d < hd; ++d) out[h * hd + d] = acc[d] / sum;
  }
  return out;
}

struct Diff {
  double worst = 0, top = 1e-30;
  double relative() const { return worst / top; }
};

// |got - want| over the given rows, and max |want| there.
Diff diff_rows(const Problem& p, const std::vector<float>& got, const std::vector<float>& want,
               int64_t first, int64_t end) {
  Diff d;
  for (size_t i = static_cast<size_t>(first * p.out_width());
       i < static_cast<size_t>(end * p.out_width()); ++i) {
    d.worst = std::max(d.worst, std::abs(double{got[i]} - want[i]));
    d.top = std::max(d.top, std::abs(double{want[i]}));
  }
  return d;
}

bool bitwise_equal_rows(const Problem& p, const std::vector<float>& a, const std::vector<float>& b,
                        int64_t first, int64_t end) {
  const size_t from = static_cast<size_t>(first * p.out_width());
  const size_t to = static_cast<size_t>(end * p.out_width());
  return std::memcmp(a.data() + from, b.data() + from, (to - from) * sizeof(float)) == 0;
}

// A parameterized test on the CUDA backend, skipped visibly where there is none.
template <typename Param>
class OnGpu : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = testing::cuda_backend_or_reason(why);
    if (!gpu_) GTEST_SKIP() << "no usable CUDA backend: " << why;
  }
  std::unique_ptr<Backend> gpu_;
};

using CudaFlashPrefill = OnGpu<Shape>;

// Sequences from scratch and after partial and whole pages, T below, at and above one
// 64-row tile and not a multiple of it, and a decode token: each of the three settings of
// the switch matches the reference, and the switch really moves each sequence's path
// (the two kernels round differently, so a sequence that changed path changes bits).
TEST_P(CudaFlashPrefill, BatchMatchesReferenceOnEitherPath) {
  const Shape shape = GetParam();
  const std::vector<SeqSpec> seqs = {{0, 100}, {45, 77}, {96, 64}, {7, 1}, {300, 130}, {33, 63}};
  auto p = make_problem(*gpu_, shape, seqs, 11, 2.f);
  const auto forced = gpu_attention(*gpu_, *p, "1");
  const auto old = gpu_attention(*gpu_, *p, "0");
  const auto by_default = gpu_attention(*gpu_, *p, std::nullopt);

  std::vector<float> want(forced.size());
  for (int64_t r = 0; r < p->rows; ++r) {
    const auto ref = reference_row(*p, r);
    std::copy(ref.begin(), ref.end(), want.begin() + r * p->out_width());
  }
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t first = p->first_row[s], end = first + seqs[s].T;
    const std::string what = shape.name + ", sequence n_past " + std::to_string(seqs[s].n_past) +
                             " T " + std::to_string(seqs[s].T);
    const Diff flash = diff_rows(*p, forced, want, first, end);
    EXPECT_LE(flash.relative(), kTolerance) << what << ": flash kernel";
    EXPECT_LE(diff_rows(*p, old, want, first, end).relative(), kTolerance)
        << what << ": CUDA cores";
    EXPECT_LE(diff_rows(*p, by_default, want, first, end).relative(), kTolerance)
        << what << ": default threshold";
    EXPECT_FALSE(bitwise_equal_rows(*p, forced, old, first, end))
        << what << ": HOSTLM_CUDA_FLASH_MIN_ROWS=1 did not take the flash kernel";
    const bool flash_by_default = seqs[s].T >= kDefaultMinRows;
    EXPECT_TRUE(bitwise_equal_rows(*p, by_default, flash_by_default ? forced : old, first, end))
        << what << ": by default it should run on " << (flash_by_default ? "flash" : "CUDA cores");
    std::printf("%s n_past %lld T %lld: flash max |diff| / max |out| = %.3g\n", shape.name.c_str(),
                static_cast<long long>(seqs[s].n_past), static_cast<long long>(seqs[s].T),
                flash.relative());
  }
}

// 8K keys before a 200-row chunk (a page boundary not at a tile's), next to a fresh prompt
// and a decode step far out: flash and CUDA cores agree everywhere and match the reference
// on a sample of rows. Sharper softmax (queries up to 4).
TEST_P(CudaFlashPrefill, LongContextMatchesCudaCoresAndReference) {
  const Shape shape = GetParam();
  const std::vector<SeqSpec> seqs = {{8001, 200}, {0, 64}, {5000, 1}};
  auto p = make_problem(*gpu_, shape, seqs, 5, 4.f);
  const auto flash = gpu_attention(*gpu_, *p, std::nullopt);
  const auto old = gpu_attention(*gpu_, *p, "0");
  // Each path is within kTolerance of the exact result (the CUDA cores measured 5e-6 here,
  // flash 3e-6), so the two are within twice that of each other.
  const Diff all = diff_rows(*p, flash, old, 0, p->rows);
  EXPECT_LE(all.relative(), 2 * kTolerance) << shape.name << ": flash against CUDA cores";
  // The reference on every 9th row and each sequence's last.
  Diff ref, old_ref;
  for (int64_t r = 0; r < p->rows; ++r) {
    const bool last =
        std::find(p->first_row.begin(), p->first_row.end(), r + 1) != p->first_row.end() ||
        r + 1 == p->rows;
    if (r % 9 != 0 && !last) continue;
    const auto want = reference_row(*p, r);
    for (int64_t i = 0; i < p->out_width(); ++i) {
      const size_t at = static_cast<size_t>(r * p->out_width() + i);
      const double w = want[static_cast<size_t>(i)];
      ref.worst = std::max(ref.worst, std::abs(flash[at] - w));
      old_ref.worst = std::max(old_ref.worst, std::abs(old[at] - w));
      ref.top = old_ref.top = std::max(ref.top, std::abs(w));
    }
  }
  EXPECT_LE(ref.relative(), kTolerance) << shape.name << ": flash against the reference";
  std::printf(
      "%s, 8K keys: of max |out|, flash vs CUDA cores %.3g, vs reference %.3g (CUDA cores vs "
      "reference %.3g)\n",
      shape.name.c_str(), all.relative(), ref.relative(), old_ref.relative());
}

// The batch above with every sequence on the flash kernel and its keys forced into 2, 3 and 16
// splits: tiles with fewer pages than splits (empty splits), splits that start past some rows'
// last key, a decode token alone in a tile. Each matches the reference; the split changes
// bits (so the switch took effect); and forcing 1 split is the default here (too few pages
// to split) and bit for bit the unsplit kernel.
TEST_P(CudaFlashPrefill, ForcedSplitsMatchReference) {
  const Shape shape = GetParam();
  const std::vector<SeqSpec> seqs = {{0, 100}, {45, 77}, {96, 64}, {7, 1}, {300, 130}, {33, 63}};
  auto p = make_problem(*gpu_, shape, seqs, 17, 2.f);
  std::vector<float> want(static_cast<size_t>(p->rows * p->out_width()));
  for (int64_t r = 0; r < p->rows; ++r) {
    const auto ref = reference_row(*p, r);
    std::copy(ref.begin(), ref.end(), want.begin() + r * p->out_width());
  }
  const auto unsplit = gpu_attention(*gpu_, *p, "1", "1");
  EXPECT_TRUE(bitwise_equal_rows(*p, unsplit, gpu_attention(*gpu_, *p, "1"), 0, p->rows))
      << shape.name << ": the default split a context too short to split (about 12 pages)";
  for (const char* splits : {"2", "3", "16"}) {
    const auto got = gpu_attention(*gpu_, *p, "1", splits);
    EXPECT_FALSE(bitwise_equal_rows(*p, got, unsplit, 0, p->rows))
        << shape.name << ": HOSTLM_CUDA_FLASH_SPLITS=" << splits << " did not split";
    for (size_t s = 0; s < seqs.size(); ++s) {
      const int64_t first = p->first_row[s], end = first + seqs[s].T;
      const Diff d = diff_rows(*p, got, want, first, end);
      EXPECT_LE(d.relative(), kTolerance)
          << shape.name << ", " << splits << " splits, sequence n_past " << seqs[s].n_past << " T "
          << seqs[s].T;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaFlashPrefill,
    ::testing::Values(Shape{8, 8, 64, "hd64_mha"}, Shape{16, 2, 64, "hd64_gqa8"},
                      Shape{4, 2, 128, "hd128_gqa2"}, Shape{16, 4, 128, "hd128_gqa4"},
                      Shape{12, 2, 128, "hd128_gqa6"}, Shape{4, 4, 256, "hd256_mha"},
                      Shape{16, 4, 256, "hd256_gqa4_qwen35_9b"},
                      Shape{24, 4, 256, "hd256_gqa6_qwen35_27b"}, Shape{16, 2, 256, "hd256_gqa8"}),
    [](const auto& p) { return p.param.name; });

// ---- Split over the keys ------------------------------------------------------------------

struct SplitCase {
  Shape shape;
  std::vector<SeqSpec> seqs;
  // Few enough blocks (heads x 64-row tiles <= 32) that the default splits on any GPU of 16
  // SMs or more; the other cases only print whether it did (it does on an H200).
  bool splits_by_default;
  std::string name;
};

void PrintTo(const SplitCase& c, std::ostream* os) { *os << c.name; }

// Rows of sequence s checked against the reference: all of a short one; of a long one its
// first two, the ends of its first tile, its middle and its last.
std::vector<int64_t> reference_rows(const Problem& p, size_t s) {
  const int64_t first = p.first_row[s], T = p.seqs[s].T;
  std::vector<int64_t> rows;
  if (p.seqs[s].n_past + T <= 512) {
    for (int64_t t = 0; t < T; ++t) rows.push_back(first + t);
    return rows;
  }
  for (int64_t t : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, T / 2, T - 1})
    if (t < T && std::find(rows.begin(), rows.end(), first + t) == rows.end())
      rows.push_back(first + t);
  return rows;
}

using CudaFlashPrefillSplit = OnGpu<SplitCase>;

// A long context behind few rows: the default (the cost model's splits), 16 forced splits and
// no split all match the reference on sampled rows and each other on every row; sequences
// beside the long one (a short flash one, whose tiles have fewer pages than the splits, and a
// decode token on the CUDA-core kernels, which split too when rows are few) are not disturbed.
TEST_P(CudaFlashPrefillSplit, MatchesUnsplitAndReference) {
  const SplitCase& c = GetParam();
  auto p = make_problem(*gpu_, c.shape, c.seqs, 23, 4.f);
  const auto unsplit = gpu_attention(*gpu_, *p, std::nullopt, "1");
  const auto by_default = gpu_attention(*gpu_, *p, std::nullopt);
  const auto many = gpu_attention(*gpu_, *p, std::nullopt, "16");
  const int64_t long_first = p->first_row[0], long_end = long_first + c.seqs[0].T;
  const bool split = !bitwise_equal_rows(*p, by_default, unsplit, long_first, long_end);
  if (c.splits_by_default) {
    EXPECT_TRUE(split) << c.name << ": the default did not split";
  }
  EXPECT_FALSE(bitwise_equal_rows(*p, many, unsplit, long_first, long_end))
      << c.name << ": HOSTLM_CUDA_FLASH_SPLITS=16 did not split";
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int64_t first = p->first_row[s], end = first + c.seqs[s].T;
    const std::string what = c.name + ", sequence n_past " + std::to_string(c.seqs[s].n_past) +
                             " T " + std::to_string(c.seqs[s].T);
    // Each path is within kTolerance of the exact result, so within twice that of each other.
    const Diff d_default = diff_rows(*p, by_default, unsplit, first, end);
    const Diff d_many = diff_rows(*p, many, unsplit, first, end);
    EXPECT_LE(d_default.relative(), 2 * kTolerance) << what << ": default against unsplit";
    EXPECT_LE(d_many.relative(), 2 * kTolerance) << what << ": 16 splits against unsplit";
    if (c.seqs[s].T < kDefaultMinRows) {  // not flash_prefill's: the split switch must not matter
      EXPECT_TRUE(bitwise_equal_rows(*p, by_default, unsplit, first, end) &&
                  bitwise_equal_rows(*p, many, unsplit, first, end))
          << what << ": a CUDA-core sequence changed with HOSTLM_CUDA_FLASH_SPLITS";
    }
    Diff ref_default, ref_many, ref_unsplit;
    for (int64_t r : reference_rows(*p, s)) {
      const auto want = reference_row(*p, r);
      for (int64_t i = 0; i < p->out_width(); ++i) {
        const size_t at = static_cast<size_t>(r * p->out_width() + i);
        const double w = want[static_cast<size_t>(i)];
        ref_default.worst = std::max(ref_default.worst, std::abs(by_default[at] - w));
        ref_many.worst = std::max(ref_many.worst, std::abs(many[at] - w));
        ref_unsplit.worst = std::max(ref_unsplit.worst, std::abs(unsplit[at] - w));
        ref_default.top = ref_many.top = ref_unsplit.top = std::max(ref_default.top, std::abs(w));
      }
    }
    EXPECT_LE(ref_default.relative(), kTolerance) << what << ": default against the reference";
    EXPECT_LE(ref_many.relative(), kTolerance) << what << ": 16 splits against the reference";
    EXPECT_LE(ref_unsplit.relative(), kTolerance) << what << ": unsplit against the reference";
    std::printf(
        "%s: default %s; of max |out|, vs unsplit: default %.3g, 16 splits %.3g; vs reference: "
        "default %.3g, 16 splits %.3g, unsplit %.3g\n",
        what.c_str(), split ? "split" : "did not split", d_default.relative(), d_many.relative(),
        ref_default.relative(), ref_many.relative(), ref_unsplit.relative());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaFlashPrefillSplit,
    ::testing::Values(
        SplitCase{Shape{16, 4, 256, "hd256_gqa4"}, {{8203, 64}}, true, "hd256_gqa4_64_after_8203"},
        SplitCase{
            Shape{24, 4, 256, "hd256_gqa6"}, {{20011, 256}}, false, "hd256_gqa6_256_after_20011"},
        SplitCase{
            Shape{16, 4, 128, "hd128_gqa4"}, {{20011, 256}}, false, "hd128_gqa4_256_after_20011"},
        SplitCase{Shape{12, 2, 128, "hd128_gqa6"}, {{8203, 64}}, true, "hd128_gqa6_64_after_8203"},
        SplitCase{Shape{16, 2, 64, "hd64_gqa8"}, {{8203, 130}}, false, "hd64_gqa8_130_after_8203"},
        SplitCase{Shape{16, 4, 256, "hd256_gqa4"},
                  {{12345, 130}, {40, 70}, {3000, 1}},
                  false,
                  "hd256_gqa4_mixed_with_short_flash_and_decode"},
        // 65 rows: the CUDA-core kernel splits its decode row's keys too, in the scratch after
        // flash_prefill's partials.
        SplitCase{Shape{16, 4, 256, "hd256_gqa4"},
                  {{8203, 64}, {5000, 1}},
                  true,
                  "hd256_gqa4_with_cuda_core_splits"}),
    [](const auto& p) { return p.param.name; });

// ---- Timing ----------------------------------------------------------------------------------

// Best of three wall times of one attention call with the given path switches (after a
// warm-up whose output goes to `result`).
double best_ms(Backend& gpu, Problem& p, const std::optional<std::string>& min_rows,
               const std::optional<std::string>& splits, std::vector<float>& result) {
  result = gpu_attention(gpu, p, min_rows, splits);
  auto out = gpu.alloc(static_cast<size_t>(p.rows * p.out_width()));
  ScopedEnv rows_setting(kMinRowsVar, min_rows);
  ScopedEnv splits_setting(kSplitsVar, splits);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    float one = 0.f;
    const auto start = std::chrono::steady_clock::now();
    gpu.paged_attention(p.batch, p.q_dev->data(), p.q_stride, p.shape.n_head, p.scale, out->data());
    gpu.download(&one, out->data(), 1);  // waits for the stream
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

// Wall time of one attention call of each path for a 4096-token prompt with Qwen3.5-27B's
// attention shape (24 query heads, 4 KV heads, head_dim 256). Prints; asserts only that the
// two agree.
TEST(CudaFlashPrefillTiming, Prompt4096Heads24Kv4Hd256) {
  std::string why;
  auto gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  auto p = make_problem(*gpu, Shape{24, 4, 256, "qwen35_27b"}, {{0, 4096}}, 3, 2.f);
  std::vector<float> flash, old;
  const double flash_ms = best_ms(*gpu, *p, std::nullopt, std::nullopt, flash);
  const double old_ms = best_ms(*gpu, *p, "0", std::nullopt, old);
  const Diff d = diff_rows(*p, flash, old, 0, p->rows);
  EXPECT_LE(d.relative(), kTolerance);
  std::printf(
      "attention of a 4096-token prompt, 24 heads / 4 KV heads, head_dim 256: CUDA cores %.2f ms, "
      "flash %.2f ms (%.1fx); max |diff| / max |out| = %.3g\n",
      old_ms, flash_ms, old_ms / flash_ms, d.relative());
  RecordProperty("cuda_cores_ms", std::to_string(old_ms));
  RecordProperty("flash_ms", std::to_string(flash_ms));
}

// A 512-row prompt chunk after 16,384 cached tokens (Qwen3.5-9B's attention: 16 query heads,
// 4 KV heads, head_dim 256, and 27B's 24 heads): the flash kernel with its default splits
// against HOSTLM_CUDA_FLASH_SPLITS=1. Prints; asserts only that the two agree.
void time_split_chunk(int64_t n_head, const char* label) {
  std::string why;
  auto gpu = testing::cuda_backend_or_reason(why);
  if (!gpu) GTEST_SKIP() << "no usable CUDA backend: " << why;
  auto p = make_problem(*gpu, Shape{n_head, 4, 256, label}, {{16384, 512}}, 7, 2.f);
  std::vector<float> split, unsplit;
  const double split_ms = best_ms(*gpu, *p, std::nullopt, std::nullopt, split);
  const double unsplit_ms = best_ms(*gpu, *p, std::nullopt, "1", unsplit);
  const Diff d = diff_rows(*p, split, unsplit, 0, p->rows);
  EXPECT_LE(d.relative(), 2 * kTolerance);
  std::printf(
      "%s: attention of 512 rows after 16384 keys, %lld heads / 4 KV heads, head_dim 256: flash "
      "unsplit %.3f ms, default splits %.3f ms (%.2fx); max |diff| / max |out| = %.3g\n",
      label, static_cast<long long>(n_head), unsplit_ms, split_ms, unsplit_ms / split_ms,
      d.relative());
  ::testing::Test::RecordProperty("unsplit_ms", std::to_string(unsplit_ms));
  ::testing::Test::RecordProperty("split_ms", std::to_string(split_ms));
}

TEST(CudaFlashPrefillTiming, Chunk512After16384Heads16Kv4Hd256) {
  time_split_chunk(16, "qwen35_9b");
}

TEST(CudaFlashPrefillTiming, Chunk512After16384Heads24Kv4Hd256) {
  time_split_chunk(24, "qwen35_27b");
}

}  // namespace
}  // namespace hostlm
