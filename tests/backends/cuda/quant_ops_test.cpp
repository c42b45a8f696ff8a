// Quantized weights on the CUDA backend against the exact product of the dequantized weights
// (cpu/quants/blocks.h, bit-identical to gguf) and against the CPU backend, on random blocks
// of every type it keeps quantized. Skipped where no GPU can be used.
//
// Tolerances, per output y[t, r] = sum_i w_i x_i, with S = sum_i |w_i x_i|:
//   decode GEMV (T <= 6): activations are rounded to int8 per 32 values
//     (step d = amax/127), so |cuda - exact| <= sum_i |w_i| * d_i / 2 + 1e-5 S.
//   tile product (7 <= T <= 64) and prefill (T > 64): weights and activations are rounded to
//     half (the activations after an exact power-of-two scale), products summed in float32 on
//     tensor cores:
//     |cuda - exact| <= 2^-10 S + 2^-24 sum_i |x_i| (half subnormals) + 1e-5 S.
//   against the CPU backend: the CUDA bound plus the CPU's own, which rounds activations to
//     int8 in blocks of at most 256 values: sum_i |w_i| * d256_i / 2 + 1e-5 S.
//   embedding rows: bit-identical to gguf's dequantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"
#include "quant_test_support.h"

namespace hostlm {
namespace {

using testing::QuantCase;

TensorView view_of(const std::string& name, DType type, int64_t rows, int64_t cols,
                   const std::vector<uint8_t>& bytes) {
  TensorView v;
  v.name = name;
  v.type = type;
  v.shape = {rows, cols};
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

class CudaQuant : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = testing::cuda_backend_or_reason(why);
    if (!gpu_) GTEST_SKIP() << "no usable CUDA backend: " << why;
    cpu_ = create_backend("cpu");
  }

  std::vector<float> run_gpu_matmul(const Weight& w, const std::vector<float>& x, int64_t T) {
    auto xd = gpu_->alloc(x.size());
    gpu_->upload(xd->data(), x.data(), x.size());
    auto yd = gpu_->alloc(static_cast<size_t>(T * w.rows));
    gpu_->matmul(w, xd->data(), T, yd->data());
    std::vector<float> y(static_cast<size_t>(T * w.rows));
    gpu_->download(y.data(), yd->data(), y.size());
    return y;
  }

  std::unique_ptr<Backend> cpu_, gpu_;
};

// Largest |x| of each block of `block` values of each token's row, per element.
std::vector<float> block_amax(const std::vector<float>& x, int64_t T, int64_t cols, int64_t block) {
  std::vector<float> out(x.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b0 = 0; b0 < cols; b0 += block) {
      const int64_t end = std::min(cols, b0 + block);
      float m = 0;
      for (int64_t i = b0; i < end; ++i)
        m = std::max(m, std::abs(x[static_cast<size_t>(t * cols + i)]));
      for (int64_t i = b0; i < end; ++i) out[static_cast<size_t>(t * cols + i)] = m;
    }
  return out;
}

struct Worst {
  double ratio = 0;  // largest |error| / bound seen
  std::string where;
};

// Checks y (CUDA) against the exact product and against y_cpu with the bounds above: the
// GEMV's when T <= 6, unless `half` says the half products ran (matmul_experts).
void check_products(const std::vector<float>& w, const std::vector<float>& x, int64_t rows,
                    int64_t cols, int64_t T, const std::vector<float>& y,
                    const std::vector<float>& y_cpu, const std::string& what, Worst& worst,
                    bool half = false) {
  const std::vector<float> amax32 = block_amax(x, T, cols, 32);
  const std::vector<float> amax256 = block_amax(x, T, cols, 256);
  int failures = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double exact = 0, mass = 0, abs_x = 0, step32 = 0, step256 = 0;
      for (int64_t i = 0; i < cols; ++i) {
        const size_t xi = static_cast<size_t>(t * cols + i);
        const double wi = w[static_cast<size_t>(r * cols + i)], xv = x[xi];
        exact += wi * xv;
        mass += std::abs(wi * xv);
        abs_x += std::abs(xv);
        step32 += std::abs(wi) * amax32[xi] / 254.0;
        step256 += std::abs(wi) * amax256[xi] / 254.0;
      }
      const double fp = 1e-5 * mass + 1e-30;
      const double bound =
          T <= 6 && !half ? step32 + fp : std::ldexp(mass, -10) + std::ldexp(abs_x, -24) + fp;
      const size_t at = static_cast<size_t>(t * rows + r);
      const double err = std::abs(y[at] - exact), err_cpu = std::abs(y[at] - y_cpu[at]);
      const double cpu_bound = bound + step256 + fp;
      for (auto [e, b, against] : {std::tuple{err, bound, "exact"}, {err_cpu, cpu_bound, "cpu"}}) {
        if (e / b > worst.ratio) {
          worst.ratio = e / b;
          worst.where = what + " vs " + against;
        }
        if (!(e <= b) && ++failures <= 3)
          ADD_FAILURE() << what << ": y[" << t << ", " << r << "] = " << y[at] << ", exact "
                        << exact << ", cpu " << y_cpu[at] << ", |error vs " << against
                        << "| = " << e << " > bound " << b;
      }
    }
}

class CudaQuantTypes : public CudaQuant, public ::testing::WithParamInterface<QuantCase> {
 protected:
  // Every row of `wg` gathered by embed (reversed, repeated, and at an unaligned output) is
  // bit-identical to gguf's dequantization.
  void expect_rows_match_gguf(const QuantCase& c, const testing::QuantReference& ref,
                              const Weight& wg, int64_t rows, int64_t cols);
};

// Shapes with few and many pieces per row (a warp's lanes unevenly loaded, rows per block not
// dividing `rows`, rows shorter than one 256-column tile chunk or ending inside one), every
// token-count bucket of the GEMV and of the tile product, and the prefill path. The tile
// product splits these small matrices over columns; a second run must give the same bits
// (the split sums are added in a fixed order and their counters are reset).
TEST_P(CudaQuantTypes, MatmulMatchesExactProductAndCpu) {
  const QuantCase& c = GetParam();
  const DTypeTraits tr = dtype_traits(c.type);
  const int64_t E = tr.block_size;
  std::mt19937 rng(1234);
  Worst worst;
  for (auto [rows, nb] : {std::pair<int64_t, int64_t>{67, E == 32 ? 3 : 1},
                          {300, E == 32 ? 32 : 4},
                          {19, E == 32 ? 129 : 17}}) {
    const int64_t cols = nb * E;
    const std::vector<uint8_t> blocks =
        testing::random_blocks(c, static_cast<size_t>(rows * nb), rng);
    const std::vector<float> w = testing::dequantize(c, blocks);
    const Weight wc = cpu_->load_weight(view_of("test.weight", c.type, rows, cols, blocks));
    const Weight wg = gpu_->load_weight(view_of("test.weight", c.type, rows, cols, blocks));
    ASSERT_EQ(wg.type, c.type) << "quantized weights must stay quantized";
    for (int64_t T : {1, 2, 3, 5, 6, 7, 8, 9, 20, 40, 64, 65}) {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> x(static_cast<size_t>(T * cols));
      for (float& v : x) v = u(rng);
      x[static_cast<size_t>(cols / 2)] = 37.f;  // an outlier, as real activations have
      std::fill(x.end() - 32, x.end(), 0.f);    // and an all-zero block
      // Tokens whose largest value is past half's range or near its subnormals: the half
      // products (T > 6) scale those rows by a power of two and must undo it on the output.
      if (T > 6) {
        for (int64_t i = 0; i < cols; ++i) {
          x[static_cast<size_t>(cols + i)] *= 0x1p17f;
          x[static_cast<size_t>(2 * cols + i)] *= 0x1p-12f;
        }
      }
      std::vector<float> y_cpu(static_cast<size_t>(T * rows));
      cpu_->matmul(wc, x.data(), T, y_cpu.data());
      const std::vector<float> y = run_gpu_matmul(wg, x, T);
      EXPECT_EQ(0, std::memcmp(y.data(), run_gpu_matmul(wg, x, T).data(), y.size() * 4))
          << c.file << " " << rows << "x" << cols << " T=" << T << ": a second run differs";
      check_products(w, x, rows, cols, T, y, y_cpu,
                     std::string(c.file) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                         " T=" + std::to_string(T),
                     worst);
    }
  }
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst.ratio));
  ::testing::Test::RecordProperty("worst_at", worst.where);
}

// A prompt's mixture-of-experts block: matmul_experts runs the experts many to a launch (tile
// products; Q4_K through its own kernel). Every expert's rows match the exact product and the
// CPU within the half products' bounds, whatever its row count (none, one, a token bucket's
// edges, several blocks of tokens), and a second run gives the same bits.
TEST_P(CudaQuantTypes, MatmulExpertsMatchEachExpertsProduct) {
  const QuantCase& c = GetParam();
  const int64_t E = dtype_traits(c.type).block_size;
  const int64_t rows = 67, cols = (E == 32 ? 12 : 2) * E;
  const std::vector<int32_t> counts = {3, 0, 1, 16, 17, 40, 64, 65, 0, 2, 33, 100, 6, 7, 1, 0};
  std::mt19937 rng(99);
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<std::vector<float>> w;
  std::vector<Weight> wc, wg;
  std::vector<int32_t> first = {0};
  for (int32_t n : counts) {
    blocks.push_back(testing::random_blocks(c, static_cast<size_t>(rows * cols / E), rng));
    w.push_back(testing::dequantize(c, blocks.back()));
    wc.push_back(cpu_->load_weight(view_of("expert.weight", c.type, rows, cols, blocks.back())));
    wg.push_back(gpu_->load_weight(view_of("expert.weight", c.type, rows, cols, blocks.back())));
    first.push_back(first.back() + n);
  }
  const int64_t total = first.back();
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(total * cols));
  for (float& v : x) v = u(rng);
  for (int64_t i = 0; i < cols; ++i) x[static_cast<size_t>(5 * cols + i)] *= 0x1p17f;
  auto xd = gpu_->alloc(x.size());
  gpu_->upload(xd->data(), x.data(), x.size());
  auto run = [&] {
    auto yd = gpu_->alloc(static_cast<size_t>(total * rows));
    gpu_->matmul_experts(wg, first, xd->data(), yd->data());
    std::vector<float> y(static_cast<size_t>(total * rows));
    gpu_->download(y.data(), yd->data(), y.size());
    return y;
  };
  const std::vector<float> y = run();
  EXPECT_EQ(0, std::memcmp(y.data(), run().data(), y.size() * 4))
      << c.file << ": a second run differs";
  Worst worst;
  for (size_t e = 0; e < counts.size(); ++e) {
    const int64_t r0 = first[e], n = counts[e];
    if (n == 0) continue;
    const std::vector<float> xe(x.begin() + r0 * cols, x.begin() + (r0 + n) * cols);
    const std::vector<float> ye(y.begin() + r0 * rows, y.begin() + (r0 + n) * rows);
    std::vector<float> y_cpu(static_cast<size_t>(n * rows));
    cpu_->matmul(wc[e], xe.data(), n, y_cpu.data());
    check_products(
        w[e], xe, rows, cols, n, ye, y_cpu,
        std::string(c.file) + " expert " + std::to_string(e) + " (" + std::to_string(n) + " rows)",
        worst, true);
  }
}

TEST_P(CudaQuantTypes, EmbedIsBitIdenticalToGguf) {
  const QuantCase& c = GetParam();
  const testing::QuantReference ref = testing::load_quant_reference(c);
  const DTypeTraits tr = dtype_traits(c.type);
  const int64_t rows = static_cast<int64_t>(ref.blocks.size() / tr.block_bytes),
                cols = tr.block_size;
  // Both placements: device memory, and the mapped host memory of an untied embedding table.
  const TensorView view = view_of("token_embd.weight", c.type, rows, cols, ref.blocks);
  for (const Weight& wg : {gpu_->load_weight(view), gpu_->load_embedding_table(view)})
    expect_rows_match_gguf(c, ref, wg, rows, cols);
}

void CudaQuantTypes::expect_rows_match_gguf(const QuantCase& c, const testing::QuantReference& ref,
                                            const Weight& wg, int64_t rows, int64_t cols) {
  std::vector<int32_t> tokens;
  for (int64_t r = rows - 1; r >= 0; --r) tokens.push_back(static_cast<int32_t>(r));
  tokens.push_back(0);
  tokens.push_back(static_cast<int32_t>(rows - 1));
  const auto T = static_cast<int64_t>(tokens.size());
  // One float past a 16-byte boundary as well: the kernel's unaligned store path.
  for (size_t shift : {size_t{0}, size_t{1}}) {
    auto out = gpu_->alloc(static_cast<size_t>(T * cols) + shift);
    gpu_->embed(wg, tokens.data(), T, out->data() + shift);
    std::vector<float> got(static_cast<size_t>(T * cols));
    gpu_->download(got.data(), out->data() + shift, got.size());
    int mismatches = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < cols; ++i) {
        const float want = ref.values[static_cast<size_t>(tokens[t] * cols + i)];
        const float have = got[static_cast<size_t>(t * cols + i)];
        if (std::memcmp(&want, &have, 4) != 0 && ++mismatches <= 3)
          ADD_FAILURE() << c.file << " row " << tokens[t] << " [" << i << "]: " << have
                        << " vs gguf " << want << " (shift " << shift << ")";
      }
    EXPECT_EQ(mismatches, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CudaQuantTypes, ::testing::ValuesIn(testing::quant_cases()),
                         [](const auto& p) { return std::string(p.param.file); });

const QuantCase& case_of(DType type) {
  for (const QuantCase& c : testing::quant_cases())
    if (c.type == type) return c;
  throw Error("no test case for the type");
}

// The Q4_K tile product's block shapes (128 or 96 rows), token warps (one or two per 16 rows)
// and k slices (two warps per 16 rows, each with half of a chunk's values; "n64": the 96-row
// shape's 64-token blocks alone), each forced through the environment read when a backend is
// made: every form gives the products of the 128-row, one-token-warp form, bit for bit where
// the column splits are the same and a chunk is one warp's, else within float32 rounding of
// the split sums. 1000 rows end inside a block of either shape.
TEST_F(CudaQuant, Q4kTileShapesAndTokenWarpsGiveTheSameProducts) {
  const QuantCase& c = case_of(DType::Q4_K);
  const int64_t rows = 1000, cols = 2048;
  std::mt19937 rng(7);
  const std::vector<uint8_t> blocks =
      testing::random_blocks(c, static_cast<size_t>(rows * cols / 256), rng);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(64 * cols));
  for (float& v : x) v = u(rng);
  struct Form {
    const char *rows, *token_warps, *k_slices;
  };
  const Form forms[] = {{"128", "1", ""},        {"128", "2", ""},    {"96", "1", ""},
                        {"96", "2", ""},         {"0", "2", ""},      {"128", "1", "16,32,64"},
                        {"96", "1", "16,32,64"}, {"0", "2", "32,n64"}};
  const testing::RestoreEnv restore{"HOSTLM_CUDA_TILE_ROWS", "HOSTLM_CUDA_TILE_TOKEN_WARPS",
                                    "HOSTLM_CUDA_TILE_K_SLICES"};
  std::vector<std::vector<std::vector<float>>> y;  // [form][T]
  const int64_t token_counts[] = {7, 16, 20, 33, 64};
  for (const Form& f : forms) {
    setenv("HOSTLM_CUDA_TILE_ROWS", f.rows, 1);
    setenv("HOSTLM_CUDA_TILE_TOKEN_WARPS", f.token_warps, 1);
    setenv("HOSTLM_CUDA_TILE_K_SLICES", f.k_slices, 1);
    std::string why;
    std::unique_ptr<Backend> gpu = testing::cuda_backend_or_reason(why);
    ASSERT_NE(gpu, nullptr) << why;
    const Weight wg = gpu->load_weight(view_of("tile.weight", c.type, rows, cols, blocks));
    auto xd = gpu->alloc(x.size());
    gpu->upload(xd->data(), x.data(), x.size());
    auto yd = gpu->alloc(static_cast<size_t>(64 * rows));
    y.emplace_back();
    for (int64_t T : token_counts) {
      gpu->matmul(wg, xd->data(), T, yd->data());
      y.back().emplace_back(static_cast<size_t>(T * rows));
      gpu->download(y.back().back().data(), yd->data(), y.back().back().size());
    }
  }
  for (size_t k = 0; k < std::size(token_counts); ++k) {
    const std::vector<float>& ref = y[0][k];
    float scale = 0.f;
    for (float v : ref) scale = std::max(scale, std::fabs(v));
    for (size_t f = 1; f < std::size(forms); ++f) {
      const std::string what = std::string("rows ") + forms[f].rows + ", token warps " +
                               forms[f].token_warps + ", k slices " + forms[f].k_slices +
                               ", T=" + std::to_string(token_counts[k]);
      // The same splits and each chunk's values in one warp: the same sums.
      if (std::string(forms[f].rows) == "128" && forms[f].k_slices[0] == '\0') {
        EXPECT_EQ(0, std::memcmp(ref.data(), y[f][k].data(), ref.size() * 4)) << what;
      }
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(ref[i], y[f][k][i], 1e-5f * scale) << what << ", element " << i;
    }
  }
}

// 8448 x 4096 Q8_0 is 36.8 MB (more than one 32 MiB upload chunk) and 34.6 M weights (more
// than one 32 M-weight prefill tile); 1030 tokens are more than one 1024-token GEMM chunk.
// Also records the worst error relative to its bound.
TEST_F(CudaQuant, LargeTensorCrossesUploadChunksTilesAndTokenChunks) {
  const QuantCase& c = case_of(DType::Q8_0);
  const int64_t rows = 8448, cols = 4096;
  std::mt19937 rng(99);
  const std::vector<uint8_t> blocks =
      testing::random_blocks(c, static_cast<size_t>(rows * cols / 32), rng);
  const std::vector<float> w = testing::dequantize(c, blocks);
  const Weight wc = cpu_->load_weight(view_of("big.weight", c.type, rows, cols, blocks));
  const Weight wg = gpu_->load_weight(view_of("big.weight", c.type, rows, cols, blocks));
  // Rows from both upload chunks, bit-exact.
  const std::vector<int32_t> tokens = {0, 4000, 7800, 8447};
  auto out = gpu_->alloc(tokens.size() * cols);
  gpu_->embed(wg, tokens.data(), static_cast<int64_t>(tokens.size()), out->data());
  std::vector<float> got(tokens.size() * cols);
  gpu_->download(got.data(), out->data(), got.size());
  for (size_t t = 0; t < tokens.size(); ++t)
    EXPECT_EQ(0,
              std::memcmp(got.data() + t * cols, w.data() + static_cast<size_t>(tokens[t]) * cols,
                          cols * sizeof(float)))
        << "row " << tokens[t];
  // 33 tokens: the tile product, 132 row blocks split in two over columns.
  Worst worst;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(33 * cols));
  for (float& v : x) v = u(rng);
  std::vector<float> y_cpu(static_cast<size_t>(33 * rows));
  cpu_->matmul(wc, x.data(), 33, y_cpu.data());
  check_products(w, x, rows, cols, 33, run_gpu_matmul(wg, x, 33), y_cpu, "8448x4096 T=33", worst);
  // 100 tokens: the prefill GEMM in two row tiles (8192 and 256 rows).
  std::vector<float> xp(static_cast<size_t>(100 * cols));
  for (float& v : xp) v = u(rng);
  std::vector<float> yp_cpu(static_cast<size_t>(100 * rows));
  cpu_->matmul(wc, xp.data(), 100, yp_cpu.data());
  check_products(w, xp, rows, cols, 100, run_gpu_matmul(wg, xp, 100), yp_cpu, "8448x4096 T=100",
                 worst);
  // Many tokens on a small slice of rows: the first 64 rows as their own tensor.
  const int64_t small_rows = 64, T = 1030;
  const std::vector<uint8_t> head(blocks.begin(), blocks.begin() + small_rows * cols / 32 * 34);
  const Weight hc = cpu_->load_weight(view_of("head.weight", c.type, small_rows, cols, head));
  const Weight hg = gpu_->load_weight(view_of("head.weight", c.type, small_rows, cols, head));
  std::vector<float> xt(static_cast<size_t>(T * cols));
  for (float& v : xt) v = u(rng);
  std::vector<float> yt_cpu(static_cast<size_t>(T * small_rows));
  cpu_->matmul(hc, xt.data(), T, yt_cpu.data());
  check_products(w, xt, small_rows, cols, T, run_gpu_matmul(hg, xt, T), yt_cpu, "64x4096 T=1030",
                 worst);
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst.ratio));
}

// Prefill expands each weight tile once for every chunk of 1024 tokens, undoing each chunk's
// activation scales on that tile's rows only. With 1 M-weight tiles
// (HOSTLM_CUDA_PREFILL_TILE_MI=1) a 600 x 4096 matrix is three tiles (256, 256, 88 rows),
// and 2100 tokens are three chunks; one token per chunk is scaled far up or down so that a
// chunk's scales applied to another's rows would show.
TEST_F(CudaQuant, PrefillTilesTimesTokenChunks) {
  const QuantCase& c = case_of(DType::Q4_K);
  const int64_t rows = 600, cols = 4096, T = 2100;
  std::mt19937 rng(5);
  const std::vector<uint8_t> blocks =
      testing::random_blocks(c, static_cast<size_t>(rows * cols / 256), rng);
  const std::vector<float> w = testing::dequantize(c, blocks);
  setenv("HOSTLM_CUDA_PREFILL_TILE_MI", "1", 1);
  auto small_tiles = create_backend("cuda");
  unsetenv("HOSTLM_CUDA_PREFILL_TILE_MI");
  const Weight wc = cpu_->load_weight(view_of("w.weight", c.type, rows, cols, blocks));
  const Weight wg = small_tiles->load_weight(view_of("w.weight", c.type, rows, cols, blocks));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(T * cols));
  for (float& v : x) v = u(rng);
  for (int64_t t : {int64_t{5}, int64_t{1030}, int64_t{2099}})
    for (int64_t k = 0; k < cols; ++k)
      x[static_cast<size_t>(t * cols + k)] *= t == 1030 ? 1.f / 4096 : 3000.f;
  std::vector<float> y_cpu(static_cast<size_t>(T * rows));
  cpu_->matmul(wc, x.data(), T, y_cpu.data());
  auto xd = small_tiles->alloc(x.size());
  small_tiles->upload(xd->data(), x.data(), x.size());
  auto yd = small_tiles->alloc(y_cpu.size());
  small_tiles->matmul(wg, xd->data(), T, yd->data());
  std::vector<float> y(y_cpu.size());
  small_tiles->download(y.data(), yd->data(), y.size());
  Worst worst;
  check_products(w, x, rows, cols, T, y, y_cpu, "600x4096 T=2100 in 1 M-weight tiles", worst);
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst.ratio));
}

// A backend told that the model passes at most 100 tokens a call (expect_batch_tokens) sizes
// its prefill scratch to that and still multiplies 300 tokens, in chunks of 100, within the
// same bounds; a later hint, after the first load, changes nothing.
TEST_F(CudaQuant, PrefillBeyondTheExpectedBatchGoesInChunks) {
  const QuantCase& c = case_of(DType::Q4_K);
  const int64_t rows = 300, cols = 1024, T = 300;
  std::mt19937 rng(9);
  const std::vector<uint8_t> blocks =
      testing::random_blocks(c, static_cast<size_t>(rows * cols / 256), rng);
  const std::vector<float> w = testing::dequantize(c, blocks);
  auto small = create_backend("cuda");
  small->expect_batch_tokens(100);
  const Weight wc = cpu_->load_weight(view_of("w.weight", c.type, rows, cols, blocks));
  const Weight wg = small->load_weight(view_of("w.weight", c.type, rows, cols, blocks));
  small->expect_batch_tokens(4096);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(T * cols));
  for (float& v : x) v = u(rng);
  for (int64_t k = 0; k < cols; ++k) x[static_cast<size_t>(150 * cols + k)] *= 3000.f;
  std::vector<float> y_cpu(static_cast<size_t>(T * rows));
  cpu_->matmul(wc, x.data(), T, y_cpu.data());
  auto xd = small->alloc(x.size());
  small->upload(xd->data(), x.data(), x.size());
  auto yd = small->alloc(y_cpu.size());
  small->matmul(wg, xd->data(), T, yd->data());
  std::vector<float> y(y_cpu.size());
  small->download(y.data(), yd->data(), y.size());
  Worst worst;
  check_products(w, x, rows, cols, T, y, y_cpu, "300x1024 T=300 in chunks of 100", worst);
}

// The pipelined tile products (tile_pipelined.cu on GPUs with the shared memory for it), Q4_K
// and Q6_K: a matrix taller than one 128-row block and not a multiple of it, 16 chunks per row
// so that the stage ring wraps several times, every token bucket, with and without column
// splits (9000 rows at 64 tokens fill an H200 without them); and an odd number of blocks in
// all (1101 x 768), whose last Q6_K scale is copied in a word reaching past the tensor. Same
// bounds as every other half product.
TEST_F(CudaQuant, PipelinedTileProductsOverManyChunks) {
  std::mt19937 rng(7);
  for (DType type : {DType::Q4_K, DType::Q6_K}) {
    const QuantCase& c = case_of(type);
    Worst worst;
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1100, 4096}, {9000, 4096}, {1101, 768}}) {
      const std::vector<uint8_t> blocks =
          testing::random_blocks(c, static_cast<size_t>(rows * cols / 256), rng);
      const std::vector<float> w = testing::dequantize(c, blocks);
      const Weight wc = cpu_->load_weight(view_of("tile.weight", c.type, rows, cols, blocks));
      const Weight wg = gpu_->load_weight(view_of("tile.weight", c.type, rows, cols, blocks));
      for (int64_t T : {7, 16, 17, 33, 64}) {
        if (rows > 1100 && cols > 768 && T != 16 && T != 64)
          continue;  // the CPU checks are O(T * rows * cols)
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        std::vector<float> x(static_cast<size_t>(T * cols));
        for (float& v : x) v = u(rng);
        std::vector<float> y_cpu(static_cast<size_t>(T * rows));
        cpu_->matmul(wc, x.data(), T, y_cpu.data());
        const std::vector<float> y = run_gpu_matmul(wg, x, T);
        const std::string what = std::string(c.file) + " " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + " T=" + std::to_string(T);
        EXPECT_EQ(0, std::memcmp(y.data(), run_gpu_matmul(wg, x, T).data(), y.size() * 4))
            << what << ": a second run differs";
        check_products(w, x, rows, cols, T, y, y_cpu, what, worst);
      }
    }
    ::testing::Test::RecordProperty(std::string("worst_error_over_bound_") + c.file,
                                    std::to_string(worst.ratio));
  }
}

// The single-token GEMV (gemv_one_token.cu) on model-sized matrices: rows enough for several
// rows per warp, rows one warp segment wide (4096) and three segments wide (12288, summed
// across warps), for the types of Q4_K_M and Q8_0 files. Same bounds as every other product.
TEST_F(CudaQuant, OneTokenGemvOnModelSizedMatrices) {
  std::mt19937 rng(11);
  Worst worst;
  for (DType type : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0}) {
    const QuantCase& c = case_of(type);
    const int64_t E = dtype_traits(type).block_size;
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{9000, 4096}, {2100, 12288}}) {
      const std::vector<uint8_t> blocks =
          testing::random_blocks(c, static_cast<size_t>(rows * cols / E), rng);
      const std::vector<float> w = testing::dequantize(c, blocks);
      const Weight wc = cpu_->load_weight(view_of("one.weight", type, rows, cols, blocks));
      const Weight wg = gpu_->load_weight(view_of("one.weight", type, rows, cols, blocks));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> x(static_cast<size_t>(cols));
      for (float& v : x) v = u(rng);
      x[static_cast<size_t>(cols / 3)] = -29.f;
      std::vector<float> y_cpu(static_cast<size_t>(rows));
      cpu_->matmul(wc, x.data(), 1, y_cpu.data());
      const std::vector<float> y = run_gpu_matmul(wg, x, 1);
      const std::string what =
          std::string(c.file) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " T=1";
      EXPECT_EQ(0, std::memcmp(y.data(), run_gpu_matmul(wg, x, 1).data(), y.size() * 4))
          << what << ": a second run differs";
      check_products(w, x, rows, cols, 1, y, y_cpu, what, worst);
    }
  }
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst.ratio));
}

// Norms and activations that feed a decode GEMV write its int8 input themselves
// (QuantMatmul::produce_acts); the product must have the bits of one whose input is quantized
// afterwards (the same values copied to another address, so nothing is reused).
TEST_F(CudaQuant, ProducedQuantizedInputEqualsQuantizingAfterwards) {
  const int64_t cols = 4096, rows = 300;
  std::mt19937 rng(13);
  const QuantCase& c = case_of(DType::Q4_K);
  const Weight w = gpu_->load_weight(view_of("fed.weight", DType::Q4_K, rows, cols,
                                             testing::random_blocks(c, rows * cols / 256, rng)));
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  for (int64_t T : {1, 3}) {
    const auto n = static_cast<size_t>(T * cols);
    const std::vector<float> a = random(n), b = random(n), norm_w = random(cols),
                             head_w = random(128);
    auto ad = gpu_->alloc(n), bd = gpu_->alloc(n), out = gpu_->alloc(n);
    auto y = gpu_->alloc(static_cast<size_t>(T * rows));
    auto fed_product_is_plain = [&](const char* op) {
      gpu_->matmul(w, out->data(), T, y->data());
      std::vector<float> got(static_cast<size_t>(T * rows)), produced(n);
      gpu_->download(got.data(), y->data(), got.size());
      gpu_->download(produced.data(), out->data(), n);
      const std::vector<float> want = run_gpu_matmul(w, produced, T);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << op << " T=" << T;
    };
    auto reset = [&] {
      gpu_->upload(ad->data(), a.data(), n);
      gpu_->upload(bd->data(), b.data(), n);
    };
    reset();
    gpu_->rms_norm(ad->data(), cols, out->data(), cols, T, cols, norm_w.data(), 1e-6f);
    fed_product_is_plain("rms_norm");
    reset();
    gpu_->add_rms_norm(ad->data(), bd->data(), T, cols, norm_w.data(), 1e-6f, out->data());
    fed_product_is_plain("add_rms_norm");
    reset();
    gpu_->swiglu(ad->data(), bd->data(), out->data(), n);
    fed_product_is_plain("swiglu");
    reset();
    gpu_->gated_rms_norm(ad->data(), bd->data(), head_w.data(), T * cols / 128, 128, 1e-6f,
                         out->data());
    fed_product_is_plain("gated_rms_norm");
    {  // the 9B's delta-rule shape, its norm taken by the rule's own launch
      const Backend::DeltaRuleShape sh{16, 32, 128, 128};
      const int64_t row = 2 * sh.n_k_heads * sh.dk + sh.n_v_heads * sh.dv;
      // Host arrays of the same values on each pass: the backend finds them by address.
      const std::vector<float> qkv = random(static_cast<size_t>(T * row)),
                               gates = random(static_cast<size_t>(T * 2 * sh.n_v_heads)),
                               a_neg(32, -0.5f), dt_bias(32, 0.25f);
      auto qd = gpu_->alloc(qkv.size()), gd = gpu_->alloc(gates.size());
      auto sd = gpu_->alloc(static_cast<size_t>(sh.n_v_heads * sh.dv * sh.dk));
      gpu_->upload(qd->data(), qkv.data(), qkv.size());
      gpu_->upload(gd->data(), gates.data(), gates.size());
      gpu_->fill(sd->data(), 0.01f, sd->size());
      reset();
      const SequenceSlice seq{0, T, 0, nullptr, sd->data()};
      gpu_->gated_delta_rule_norm_seqs({&seq, 1}, qd->data(), gd->data(),
                                       gd->data() + T * sh.n_v_heads, a_neg.data(), dt_bias.data(),
                                       sh, bd->data(), head_w.data(), 1e-6f, T, out->data());
      fed_product_is_plain("gated_delta_rule_norm_seqs");
    }
    reset();
    gpu_->upload(out->data(), a.data(), n);
    gpu_->mul_sigmoid(out->data(), bd->data(), cols, T, cols);
    fed_product_is_plain("mul_sigmoid");
  }
}

// Matrices that read the same input (decode: one launch per type) give the bits of one
// matmul each: Q4_K and Q6_K matrices of different heights, at every GEMV token count and at
// tile products' (one launch per type and block shape, each matrix with its own plan).
TEST_F(CudaQuant, SameInputGroupEqualsOneMatmulEach) {
  const int64_t cols = 512;
  std::mt19937 rng(7);
  // Row counts that take one block and several, split and not, and (12,288) the narrow
  // block shape of the pipelined tile kernel beside the wide one in one group.
  const std::pair<DType, int64_t> shapes[] = {{DType::Q4_K, 300}, {DType::Q6_K, 19},
                                              {DType::Q4_K, 67},  {DType::Q4_K, 32},
                                              {DType::Q6_K, 700}, {DType::Q4_K, 12288}};
  std::vector<Weight> ws;
  for (auto [type, rows] : shapes) {
    const QuantCase& c = case_of(type);
    const std::vector<uint8_t> blocks =
        testing::random_blocks(c, static_cast<size_t>(rows * cols / 256), rng);
    ws.push_back(gpu_->load_weight(view_of("group.weight", type, rows, cols, blocks)));
  }
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t T : {1, 2, 3, 5, 6, 7, 20, 33, 64}) {
    std::vector<float> x(static_cast<size_t>(T * cols));
    for (float& v : x) v = u(rng);
    auto xd = gpu_->alloc(x.size());
    gpu_->upload(xd->data(), x.data(), x.size());
    std::vector<std::unique_ptr<Buffer>> ys;
    std::vector<MatmulOut> outs;
    for (const Weight& w : ws) {
      ys.push_back(gpu_->alloc(static_cast<size_t>(T * w.rows)));
      outs.push_back({&w, ys.back()->data()});
    }
    gpu_->matmul_same_input(outs, xd->data(), T);
    for (size_t j = 0; j < ws.size(); ++j) {
      std::vector<float> got(static_cast<size_t>(T * ws[j].rows));
      gpu_->download(got.data(), ys[j]->data(), got.size());
      const std::vector<float> want = run_gpu_matmul(ws[j], x, T);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "matrix " << j << " (" << ws[j].rows << " rows), T=" << T;
    }
  }
}

// A delta-rule layer's decode input projections with the convolution in the product's
// epilogue (matmul_same_input_conv1d) give the bits of the products and then conv1d_silu:
// the convolved rows, the moved state and the other products, over two steps, for the
// paired (Q4_K) and plain (Q6_K, Q8_0) one-token forms, one segment of a row per warp and
// several (5,120 columns). The first product's own output is left unwritten when fused.
TEST_F(CudaQuant, ConvolvedProductEqualsProductThenConv) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = u(rng);
    return v;
  };
  constexpr int64_t K = 4;
  for (DType type : {DType::Q4_K, DType::Q6_K, DType::Q8_0})
    for (int64_t cols : {int64_t{1024}, int64_t{5120}}) {
      const int64_t channels = 608, z_rows = 96;
      const auto load = [&](const char* name, DType t, int64_t rows) {
        const QuantCase& ct = case_of(t);
        const int64_t b = t == DType::Q8_0 ? 32 : 256;
        return gpu_->load_weight(
            view_of(name, t, rows, cols, testing::random_blocks(ct, rows * cols / b, rng)));
      };
      const Weight w_qkv = load("qkv.weight", type, channels);
      const Weight w_z = load("z.weight", type, z_rows);
      const Weight w_b = load("b.weight", type == DType::Q6_K ? DType::Q4_K : DType::Q6_K, 32);
      const std::vector<float> conv_w = random(static_cast<size_t>(channels * K));
      const std::vector<float> state0 = random(static_cast<size_t>((K - 1) * channels));
      const std::vector<std::vector<float>> xs = {random(static_cast<size_t>(cols)),
                                                  random(static_cast<size_t>(cols))};
      testing::expect_conv_in_product_equals_apart(
          *gpu_, w_qkv, w_z, w_b, K, conv_w, state0, xs, true,
          std::string(dtype_name(type)) + " cols " + std::to_string(cols));
    }
}

// A load that grows the activation scratch (a wider matrix) leaves no stale conversion
// behind: the same input multiplied again, at the same address, gives the same result, for
// the GEMV (quantized copy) and the tile product (half copy).
TEST_F(CudaQuant, LoadThatGrowsScratchForgetsConvertedInputs) {
  std::mt19937 rng(5);
  const QuantCase& c = case_of(DType::Q4_K);
  const Weight narrow = gpu_->load_weight(view_of("narrow.weight", DType::Q4_K, 64, 256,
                                                  testing::random_blocks(c, 64 * 256 / 256, rng)));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t T : {1, 20}) {
    std::vector<float> x(static_cast<size_t>(T * 256));
    for (float& v : x) v = u(rng);
    auto xd = gpu_->alloc(x.size());
    gpu_->upload(xd->data(), x.data(), x.size());
    auto y = gpu_->alloc(static_cast<size_t>(T * 64));
    gpu_->matmul(narrow, xd->data(), T, y->data());
    std::vector<float> before(static_cast<size_t>(T * 64)), after(before.size());
    gpu_->download(before.data(), y->data(), before.size());
    const int64_t wide_cols = 4096 * (T == 1 ? 1 : 2);  // each pass grows the scratch again
    gpu_->load_weight(view_of("wide.weight", DType::Q4_K, 32, wide_cols,
                              testing::random_blocks(c, 32 * wide_cols / 256, rng)));
    gpu_->matmul(narrow, xd->data(), T, y->data());
    gpu_->download(after.data(), y->data(), after.size());
    EXPECT_EQ(0, std::memcmp(before.data(), after.data(), before.size() * sizeof(float)))
        << "T=" << T;
  }
}

std::string load_error(Backend& b, const TensorView& v) {
  try {
    b.load_weight(v);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(CudaQuant, LoadErrorsNameTheTensorAndTheProblem) {
  std::vector<uint8_t> bytes(4 * 8 * 36);
  // A type no backend computes with (Q8_1, an intermediate of llama.cpp's kernels that no model
  // file holds): named, with the tensor.
  TensorView q8_1 = view_of("blk.3.ffn_up.weight", DType::Q8_1, 4, 256, bytes);
  std::string msg = load_error(*gpu_, q8_1);
  EXPECT_NE(msg.find("blk.3.ffn_up.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("q8_1"), std::string::npos) << msg;
  // Rows that are not whole blocks.
  TensorView ragged = view_of("blk.0.attn_q.weight", DType::Q4_K, 2, 96, bytes);
  msg = load_error(*gpu_, ragged);
  EXPECT_NE(msg.find("blk.0.attn_q.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("whole blocks"), std::string::npos) << msg;
  // A byte count that does not match the shape.
  TensorView short_data = view_of("output.weight", DType::Q8_0, 4, 64, bytes);
  short_data.nbytes = 4 * 2 * 34 - 1;
  msg = load_error(*gpu_, short_data);
  EXPECT_NE(msg.find("output.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bytes"), std::string::npos) << msg;
  // More than any GPU holds (1.2 TB; the data is never read): out of memory, with the size
  // asked for and what is free.
  TensorView huge = view_of("token_embd.weight", DType::Q8_0, int64_t{1} << 28, 4096, bytes);
  huge.nbytes = (size_t{1} << 28) * 128 * 34;
  msg = load_error(*gpu_, huge);
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("token_embd.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MiB free"), std::string::npos) << msg;
  // The backend stays usable afterwards.
  const QuantCase& c = case_of(DType::Q4_0);
  std::mt19937 rng(5);
  const std::vector<uint8_t> ok = testing::random_blocks(c, 8, rng);
  const Weight w = gpu_->load_weight(view_of("ok.weight", c.type, 8, 32, ok));
  const std::vector<float> y = run_gpu_matmul(w, std::vector<float>(32, 1.f), 1);
  const std::vector<float> wf = testing::dequantize(c, ok);
  for (int r = 0; r < 8; ++r) {
    double s = 0, step = 0;
    for (int i = 0; i < 32; ++i) {
      s += wf[static_cast<size_t>(r * 32 + i)];
      step += std::abs(wf[static_cast<size_t>(r * 32 + i)]) / 254.0;
    }
    EXPECT_NEAR(y[static_cast<size_t>(r)], s, step + 1e-5 * std::abs(s) + 1e-6);
  }
}

}  // namespace
}  // namespace hostlm
