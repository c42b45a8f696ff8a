// Throughput of the CUDA backend's matmul per weight type, through Backend::matmul as the
// model calls it (activation quantization and GEMV, or dequantize + cuBLAS for prefill).
//
// For each type and shape, a pool of distinct matrices larger than the GPU's L2 is cycled so
// every call streams its weights from memory, as decode does. `calls` matmuls are queued
// back to back and timed from the host around a final synchronising download, so the figure
// is the steady-state rate with launches overlapped (no CUDA graphs).
//   GB/s: weight bytes read per second (the decode figure of merit; H200 copy bandwidth is
//         about 4.3-4.8 TB/s).
//   TFLOP/s: 2 * rows * cols * T per second (the prefill figure of merit).
// Usage: bench_cuda_quant [TYPE ...]   (default: the fast decode types and F16/BF16)
//   HOSTLM_BENCH_TOKENS=1,8 times only those token counts (default 1,2,4,8,32,512);
//   HOSTLM_BENCH_SHAPES=8192x4096,256x2048 only those shapes (default the 9B's).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/error.h"
#include "hostlm/half.h"
#include "hostlm/ops.h"

namespace {

using hostlm::DType;

// Byte offsets of the f16 scales of each block type (spec 7.2).
std::vector<int> f16_fields(DType t) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K:
      return {0, 2};
    case DType::Q2_K:
      return {80, 82};
    case DType::Q3_K:
      return {108};
    case DType::Q6_K:
      return {208};
    default:
      return {0};
  }
}

// Random weights with realistic magnitudes (f16 scales in [1e-4, 1e-2]).
std::vector<uint8_t> random_matrix(DType type, int64_t rows, int64_t cols, uint64_t seed) {
  const hostlm::DTypeTraits tr = hostlm::dtype_traits(type);
  std::vector<uint8_t> data(*hostlm::dtype_bytes(type, static_cast<uint64_t>(rows * cols)));
  std::mt19937_64 rng(seed);
  if (tr.block_size == 1) {
    std::normal_distribution<float> normal(0.f, 0.02f);
    for (size_t i = 0; i < data.size(); i += tr.block_bytes) {
      const float v = normal(rng);
      if (type == DType::F32) {
        std::memcpy(data.data() + i, &v, 4);
      } else {
        const uint16_t h = type == DType::F16 ? hostlm::f32_to_f16(v) : hostlm::f32_to_bf16(v);
        std::memcpy(data.data() + i, &h, 2);
      }
    }
    return data;
  }
  for (size_t i = 0; i < data.size(); i += 8) {
    const uint64_t z = rng();
    std::memcpy(data.data() + i, &z, std::min<size_t>(8, data.size() - i));
  }
  std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
  for (size_t b = 0; b < data.size(); b += tr.block_bytes)
    for (int off : f16_fields(type)) {
      const uint16_t h = hostlm::f32_to_f16(scale(rng));
      std::memcpy(data.data() + b + off, &h, 2);
    }
  return data;
}

struct Shape {
  int64_t rows, cols;
};

// A fresh backend per run, so that each pool's device memory is freed after it.
void run(DType type, Shape s, const std::vector<int64_t>& token_counts) {
  auto backend = hostlm::create_backend("cuda");
  hostlm::Backend& gpu = *backend;
  constexpr size_t kPoolBytes = size_t{1} << 30;  // 20x the H200's L2
  const std::vector<uint8_t> host = random_matrix(type, s.rows, s.cols, 1);
  const size_t n_matrices = std::max<size_t>(4, kPoolBytes / host.size());
  std::vector<hostlm::Weight> weights;
  for (size_t m = 0; m < n_matrices; ++m) {
    hostlm::TensorView v;
    v.name = "bench.weight";
    v.type = type;
    v.shape = {s.rows, s.cols};
    v.data = host.data();  // the same bytes, distinct device copies
    v.nbytes = host.size();
    weights.push_back(gpu.load_weight(v));
  }
  const int64_t max_t = *std::max_element(token_counts.begin(), token_counts.end());
  std::vector<float> x(static_cast<size_t>(max_t * s.cols));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);
  auto xd = gpu.alloc(x.size());
  gpu.upload(xd->data(), x.data(), x.size());
  auto yd = gpu.alloc(static_cast<size_t>(max_t * s.rows));
  float sink = 0;
  for (int64_t T : token_counts) {
    const int calls = T <= 32 ? 400 : 40;
    for (int i = 0; i < 8; ++i) gpu.matmul(weights[i % n_matrices], xd->data(), T, yd->data());
    gpu.download(&sink, yd->data(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      gpu.matmul(weights[static_cast<size_t>(i) % n_matrices], xd->data(), T, yd->data());
    gpu.download(&sink, yd->data(), 1);
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
    std::printf("%-7s %6lld x %-6lld T=%-4lld %9.2f us  %8.1f GB/s  %7.1f TFLOP/s\n",
                std::string(hostlm::dtype_name(type)).c_str(), static_cast<long long>(s.rows),
                static_cast<long long>(s.cols), static_cast<long long>(T), sec * 1e6,
                static_cast<double>(host.size()) / sec / 1e9,
                2.0 * static_cast<double>(s.rows * s.cols * T) / sec / 1e12);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<DType> types;
  for (int i = 1; i < argc; ++i) {
    bool found = false;
    for (uint32_t id = 0; id < 64 && !found; ++id)
      if (auto tr = hostlm::dtype_traits(id); tr && tr->name == argv[i]) {
        types.push_back(static_cast<DType>(id));
        found = true;
      }
    if (!found) {
      std::fprintf(stderr, "unknown type %s (use ggml names: q4_K, q8_0, bf16, ...)\n", argv[i]);
      return 2;
    }
  }
  if (types.empty())
    types = {DType::Q4_K, DType::Q5_K,   DType::Q6_K, DType::Q8_0,
             DType::Q4_0, DType::IQ4_XS, DType::F16,  DType::BF16};
  std::vector<int64_t> token_counts = {1, 2, 4, 8, 32, 512};
  if (const char* env = std::getenv("HOSTLM_BENCH_TOKENS"); env && *env) {
    token_counts.clear();
    for (const char* p = env; *p;) {
      char* end = nullptr;
      const long long t = std::strtoll(p, &end, 10);
      if (end == p || t < 1) {
        std::fprintf(stderr, "HOSTLM_BENCH_TOKENS: not a list of token counts: %s\n", env);
        return 2;
      }
      token_counts.push_back(t);
      p = *end == ',' ? end + 1 : end;
    }
  }
  // Qwen3.5-9B shapes (square projections, the FFN's up/gate and down) unless
  // HOSTLM_BENCH_SHAPES=ROWSxCOLS,... names others.
  std::vector<Shape> shapes = {Shape{4096, 4096}, Shape{12288, 4096}, Shape{4096, 12288}};
  if (const char* env = std::getenv("HOSTLM_BENCH_SHAPES"); env && *env) {
    shapes.clear();
    for (const char* p = env; *p;) {
      char* end = nullptr;
      const long long rows = std::strtoll(p, &end, 10);
      char* end2 = nullptr;
      const long long cols = *end == 'x' ? std::strtoll(end + 1, &end2, 10) : 0;
      if (end == p || rows < 1 || cols < 1) {
        std::fprintf(stderr, "HOSTLM_BENCH_SHAPES: not a list of ROWSxCOLS: %s\n", env);
        return 2;
      }
      shapes.push_back(Shape{rows, cols});
      p = *end2 == ',' ? end2 + 1 : end2;
    }
  }
  try {
    for (DType type : types)
      for (Shape s : shapes) run(type, s, token_counts);
  } catch (const hostlm::Error& e) {
    std::fprintf(stderr, "bench_cuda_quant: %s\n", e.what());
    return 1;
  }
  return 0;
}
