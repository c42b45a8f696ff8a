// The quantized weight types of the CPU backend against the gguf Python package: reference
// blocks and their gguf.quants.dequantize output come from make_quant_reference.py
// (tests/data/quants/). Dequantization must match bit for bit on every path (scalar, AVX2,
// the one dispatched); every dot-product path must match the product of the dequantized row
// with x to 1e-5 of sum |w_i x_i|.
#include "cpu/quants/quants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/dot.h"
#include "cpu/quants/qgemm.h"
#include "hostlm/dtype.h"
#include "hostlm/error.h"
#include "hostlm/tensor_view.h"

namespace hostlm::cpu {
namespace {

struct TypeCase {
  DType type;
  const char* file;  // stem of the files in tests/data/quants/
  bool simd = true;  // has AVX2 kernels (the ternary types compute through the scalar path)
};

// Names the case in gtest's failure output instead of dumping its bytes.
void PrintTo(const TypeCase& c, std::ostream* os) { *os << c.file; }

const TypeCase kQuantTypes[] = {
    {DType::Q4_0, "q4_0"},
    {DType::Q4_1, "q4_1"},
    {DType::Q5_0, "q5_0"},
    {DType::Q5_1, "q5_1"},
    {DType::Q8_0, "q8_0"},
    {DType::IQ4_NL, "iq4_nl"},
    {DType::Q2_K, "q2_k"},
    {DType::Q3_K, "q3_k"},
    {DType::Q4_K, "q4_k"},
    {DType::Q5_K, "q5_k"},
    {DType::Q6_K, "q6_k"},
    {DType::IQ4_XS, "iq4_xs"},
    {DType::TQ1_0, "tq1_0", false},
    {DType::TQ2_0, "tq2_0", false},
    {DType::IQ2_XXS, "iq2_xxs", false},
    {DType::IQ2_XS, "iq2_xs", false},
    {DType::IQ2_S, "iq2_s", false},
    {DType::IQ3_XXS, "iq3_xxs", false},
    {DType::IQ3_S, "iq3_s", false},
    {DType::IQ1_S, "iq1_s", false},
    {DType::IQ1_M, "iq1_m", false},
    {DType::MXFP4, "mxfp4", false},
};

std::filesystem::path data_dir() {
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"); src != nullptr && *src != '\0')
    return std::filesystem::path(src) / "tests/data/quants";
  return std::filesystem::path(__FILE__).parent_path() / "../../data/quants";
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Reference {
  std::vector<uint8_t> blocks;
  std::vector<float> values;
  DTypeTraits traits;
  size_t n_blocks() const { return blocks.size() / traits.block_bytes; }
};

Reference load_reference(DType type, const std::string& stem) {
  Reference r;
  r.traits = dtype_traits(type);
  r.blocks = read_bytes(data_dir() / (stem + ".blocks"));
  const std::vector<uint8_t> raw = read_bytes(data_dir() / (stem + ".f32"));
  r.values.resize(raw.size() / sizeof(float));
  std::memcpy(r.values.data(), raw.data(), r.values.size() * sizeof(float));
  return r;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Counts mismatching bit patterns, reporting the first few.
int compare_bits(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (bits(got[i]) == bits(want[i])) continue;
    if (++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " (0x" << std::hex
                    << bits(got[i]) << "), gguf says " << want[i] << " (0x" << bits(want[i]) << ")"
                    << std::dec;
  }
  return bad;
}

class QuantTypes : public ::testing::TestWithParam<TypeCase> {};

TEST_P(QuantTypes, DequantizesBitIdenticalToGguf) {
  const TypeCase tc = GetParam();
  const Reference ref = load_reference(tc.type, tc.file);
  ASSERT_EQ(ref.blocks.size() % ref.traits.block_bytes, 0u);
  ASSERT_EQ(ref.values.size(), ref.n_blocks() * ref.traits.block_size);
  ASSERT_GE(ref.n_blocks(), 30u);

  struct Path {
    const char* name;
    RowToF32Fn fn;
  };
  std::vector<Path> paths = {{"scalar", quants::row_to_f32_scalar(tc.type)},
                             {"dispatched", row_to_f32_kernel(tc.type)}};
  if (quants::cpu_has_avx2() && tc.simd)
    paths.push_back({"avx2", quants::row_to_f32_avx2(tc.type)});
  for (const Path& p : paths) {
    ASSERT_NE(p.fn, nullptr) << p.name;
    // The whole file as one row, then block by block from a misaligned copy.
    std::vector<float> got(ref.values.size(), -1.f);
    p.fn(ref.blocks.data(), got.data(), static_cast<int64_t>(got.size()));
    EXPECT_EQ(compare_bits(got, ref.values, std::string(p.name) + " row"), 0);

    std::vector<uint8_t> shifted(ref.traits.block_bytes + 1);
    std::vector<float> block_out(ref.values.size(), -1.f);
    for (size_t b = 0; b < ref.n_blocks(); ++b) {
      std::memcpy(shifted.data() + 1, ref.blocks.data() + b * ref.traits.block_bytes,
                  ref.traits.block_bytes);
      p.fn(shifted.data() + 1, block_out.data() + b * ref.traits.block_size, ref.traits.block_size);
    }
    EXPECT_EQ(compare_bits(block_out, ref.values, std::string(p.name) + " block"), 0);
  }
}

// A row of n elements made of reference blocks in a random order, with a matching x whose
// magnitudes vary over several decades, so blocks of every kind meet positive and negative
// activations.
struct DotCase {
  std::vector<uint8_t> row;
  std::vector<float> x;
  std::vector<float> w;  // the row dequantized (bit-identical to gguf, tested above)
};

DotCase make_dot_case(const Reference& ref, DType type, int64_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  DotCase c;
  const size_t bb = ref.traits.block_bytes;
  // One spare byte in front so that the row can be tested at an odd address.
  c.row.resize(1 + n_blocks * bb);
  std::uniform_int_distribution<size_t> pick(0, ref.n_blocks() - 1);
  for (int64_t b = 0; b < n_blocks; ++b)
    std::memcpy(c.row.data() + 1 + b * bb, ref.blocks.data() + pick(rng) * bb, bb);
  const int64_t n = n_blocks * ref.traits.block_size;
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> decade(-3, 3);
  c.x.resize(n + 1);
  for (float& v : c.x) v = normal(rng) * std::pow(10.f, static_cast<float>(decade(rng)));
  c.w.resize(n);
  row_to_f32_kernel(type)(c.row.data() + 1, c.w.data(), n);
  return c;
}

// |got - exact| <= 1e-5 * sum |w_i x_i|: the bound every float summation order meets.
void expect_dot_close(DotFn fn, const DotCase& c, size_t row_offset, size_t x_offset,
                      const std::string& what) {
  const int64_t n = static_cast<int64_t>(c.w.size());
  const float* x = c.x.data() + x_offset;
  double exact = 0.0, magnitude = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    exact += static_cast<double>(c.w[i]) * x[i];
    magnitude += std::fabs(static_cast<double>(c.w[i]) * x[i]);
  }
  const float got = fn(c.row.data() + row_offset, x, n);
  EXPECT_LE(std::fabs(got - exact), 1e-5 * magnitude + 1e-30)
      << what << ": got " << got << ", exact " << exact << ", sum |w x| " << magnitude;
}

TEST_P(QuantTypes, DotPathsMatchDequantizedProduct) {
  const TypeCase tc = GetParam();
  const Reference ref = load_reference(tc.type, tc.file);
  struct Path {
    const char* name;
    DotFn fn;
  };
  std::vector<Path> paths = {{"scalar", quants::dot_scalar(tc.type)},
                             {"dispatched", dot_kernel(tc.type)}};
  ASSERT_NE(paths[0].fn, nullptr);
  ASSERT_NE(paths[1].fn, nullptr);
  if (quants::cpu_has_avx2() && tc.simd) {
    paths.push_back({"avx2", quants::dot_avx2(tc.type)});
    ASSERT_NE(paths.back().fn, nullptr);
  }
  const int64_t block = ref.traits.block_size;
  // One block, an odd count, and a long row (4096 or 8192 elements, like Qwen3.5's widths).
  for (int64_t n_blocks : {int64_t{1}, int64_t{3}, (block == 32 ? int64_t{128} : int64_t{32})}) {
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      const DotCase c = make_dot_case(ref, tc.type, n_blocks, seed * 7919u + n_blocks);
      for (const Path& p : paths) {
        const std::string what = std::string(p.name) + " n_blocks=" + std::to_string(n_blocks) +
                                 " seed=" + std::to_string(seed);
        expect_dot_close(p.fn, c, 1, 0, what);
        expect_dot_close(p.fn, c, 1, 1, what + " (x at an odd float)");
      }
    }
  }
}

TEST_P(QuantTypes, LoadWeightAndMatmul) {
  const TypeCase tc = GetParam();
  const Reference ref = load_reference(tc.type, tc.file);
  const int64_t block = ref.traits.block_size;
  const int64_t cols = 2 * 256, rows = 5;
  const int64_t blocks_per_row = cols / block;
  std::vector<uint8_t> data(rows * blocks_per_row * ref.traits.block_bytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = ref.blocks[i % ref.blocks.size()];

  auto backend = make_cpu_backend();
  TensorView view;
  view.name = "blk.0.ffn_down.weight";
  view.type = tc.type;
  view.shape = {rows, cols};
  view.data = data.data();
  view.nbytes = data.size();
  const Weight w = backend->load_weight(view);
  EXPECT_EQ(w.type, tc.type);
  EXPECT_EQ(w.row_bytes, static_cast<size_t>(blocks_per_row) * ref.traits.block_bytes);

  for (const int64_t T : {int64_t{1}, int64_t{3}, int64_t{6}}) {
    std::vector<float> x(T * cols), y(T * rows), w_row(cols);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (float& v : x) v = normal(rng);
    backend->matmul(w, x.data(), T, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      row_to_f32_kernel(tc.type)(data.data() + r * w.row_bytes, w_row.data(), cols);
      for (int64_t t = 0; t < T; ++t) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t i = 0; i < cols; ++i) {
          exact += static_cast<double>(w_row[i]) * x[t * cols + i];
          magnitude += std::fabs(static_cast<double>(w_row[i]) * x[t * cols + i]);
        }
        // matmul quantizes the activations to 8 bits per block (qgemm_test.cpp holds the
        // exact bound); 1% of sum |w x| is far above that rounding and far below an error.
        EXPECT_LE(std::fabs(y[t * rows + r] - exact), 1e-2 * magnitude + 1e-30)
            << "T " << T << " row " << r << " token " << t;
      }
    }
  }

  // embed reads whole rows through row_to_f32.
  const int32_t tokens[2] = {4, 1};
  std::vector<float> e(2 * cols), w_row(cols);
  backend->embed(w, tokens, 2, e.data());
  for (int k = 0; k < 2; ++k) {
    row_to_f32_kernel(tc.type)(data.data() + tokens[k] * w.row_bytes, w_row.data(), cols);
    EXPECT_EQ(std::memcmp(e.data() + k * cols, w_row.data(), cols * sizeof(float)), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, QuantTypes, ::testing::ValuesIn(kQuantTypes),
                         [](const ::testing::TestParamInfo<TypeCase>& p) {
                           return std::string(p.param.file);
                         });

// Types without integer kernels (TQ1_0 since session 35) go through the backend's float path:
// the
// stored row read directly for one token, expanded once and reused for several.
TEST(FloatPathTypes, BackendMatmulMatchesDequantizedProduct) {
  for (const TypeCase tc : kQuantTypes) {
    if (tc.simd || quants::qgemm_best(tc.type) != nullptr) continue;  // integer kernels
    const Reference ref = load_reference(tc.type, tc.file);
    const int64_t cols = 512, rows = 21;
    const size_t bb = ref.traits.block_bytes;
    const size_t row_bytes = static_cast<size_t>(cols / ref.traits.block_size) * bb;
    std::vector<uint8_t> w(rows * row_bytes);
    for (size_t b = 0; b < w.size() / bb; ++b) {
      std::memcpy(w.data() + b * bb, ref.blocks.data() + ((b * 5) % ref.n_blocks()) * bb, bb);
    }
    TensorView view;
    view.name = "blk.0.ffn_up.weight";
    view.type = tc.type;
    view.shape = {rows, cols};
    view.data = w.data();
    view.nbytes = w.size();
    auto backend = make_cpu_backend();
    backend->set_threads(2);
    const Weight wt = backend->load_weight(view);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (const int64_t T : {1, 5}) {
      std::vector<float> x(T * cols), y(T * rows), wr(cols);
      for (float& v : x) v = normal(rng);
      backend->matmul(wt, x.data(), T, y.data());
      for (int64_t r = 0; r < rows; ++r) {
        row_to_f32_kernel(tc.type)(w.data() + r * row_bytes, wr.data(), cols);
        for (int64_t t = 0; t < T; ++t) {
          double exact = 0.0, magnitude = 0.0;
          for (int64_t i = 0; i < cols; ++i) {
            exact += double{wr[i]} * x[t * cols + i];
            magnitude += std::fabs(double{wr[i]} * x[t * cols + i]);
          }
          EXPECT_LE(std::fabs(y[t * rows + r] - exact), 1e-5 * magnitude + 1e-30)
              << tc.file << " T=" << T << " row " << r << " token " << t;
        }
      }
    }
  }
}

TEST(PlainTypes, ConvertBitIdenticalToGguf) {
  for (const TypeCase tc : {TypeCase{DType::F16, "f16"}, TypeCase{DType::BF16, "bf16"}}) {
    const Reference ref = load_reference(tc.type, tc.file);
    ASSERT_EQ(ref.values.size(), ref.blocks.size() / 2) << tc.file;
    std::vector<float> got(ref.values.size());
    row_to_f32_kernel(tc.type)(ref.blocks.data(), got.data(), static_cast<int64_t>(got.size()));
    EXPECT_EQ(compare_bits(got, ref.values, tc.file), 0);
  }
}

TEST(LoadWeight, RefusesUnsupportedTypesNamingTensorAndType) {
  auto backend = make_cpu_backend();
  std::vector<uint8_t> data(66 * 2);
  for (DType type : {DType::Q8_1, DType::Q8_K, DType::I32}) {
    TensorView view;
    view.name = "blk.3.attn_qkv.weight";
    view.type = type;
    view.shape = {2, 256};
    view.data = data.data();
    view.nbytes = data.size();
    try {
      backend->load_weight(view);
      ADD_FAILURE() << dtype_name(type) << " was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("blk.3.attn_qkv.weight"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string(dtype_name(type))), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace hostlm::cpu
