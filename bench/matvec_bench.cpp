// Matrix-vector throughput of the CPU backend per weight type, reported as GB/s of weight
// bytes read (bytes_per_second) and elements per second (items_per_second).
//
//   Matvec/<type>/dram: Backend::matmul with T=1 over matrices of 4096 x 2048 cycled through
//     a ~768 MiB pool, so every call streams from memory as decode does; 2 threads unless
//     HOSTLM_BENCH_THREADS says otherwise.
//   Dot/<type>/<path>: one thread, one kernel path, 256 rows of 4096 that stay in L2: the
//     compute ceiling of the kernel.
//   Dequant/<type>/<path>: one thread, the same rows expanded to float32 (prefill's path).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/dot.h"
#include "cpu/quants/quants.h"
#include "hostlm/dtype.h"
#include "hostlm/half.h"
#include "hostlm/tensor_view.h"

namespace {

using hostlm::DType;

struct TypeInfo {
  DType type;
  std::vector<int> f16_fields;  // byte offsets of the f16 scales in a block
};

const std::vector<TypeInfo>& types() {
  static const std::vector<TypeInfo> t = {
      {DType::F32, {}},
      {DType::F16, {}},
      {DType::BF16, {}},
      {DType::Q8_0, {0}},
      {DType::Q4_0, {0}},
      {DType::Q4_1, {0, 2}},
      {DType::Q5_0, {0}},
      {DType::Q5_1, {0, 2}},
      {DType::IQ4_NL, {0}},
      {DType::Q2_K, {80, 82}},
      {DType::Q3_K, {108}},
      {DType::Q4_K, {0, 2}},
      {DType::Q5_K, {0, 2}},
      {DType::Q6_K, {208}},
      {DType::IQ4_XS, {0}},
      // The float path (no integer kernels): every block expanded, then float dot products.
      {DType::IQ2_XXS, {0}},
      {DType::IQ2_XS, {0}},
      {DType::IQ2_S, {0}},
      {DType::IQ3_XXS, {0}},
      {DType::IQ3_S, {0}},
      {DType::IQ1_S, {0}},
      {DType::TQ1_0, {52}},
      {DType::TQ2_0, {64}},
      {DType::MXFP4, {}},
  };
  return t;
}

// Random weights of `type` with realistic magnitudes (no subnormal or huge scales, which
// would measure floating-point assists instead of the kernel).
void fill(const TypeInfo& info, uint8_t* data, size_t bytes, uint64_t seed) {
  const auto tr = hostlm::dtype_traits(info.type);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  if (tr.block_size == 1) {
    std::normal_distribution<float> normal(0.f, 0.02f);
    for (size_t i = 0; i + tr.block_bytes <= bytes; i += tr.block_bytes) {
      const float v = normal(rng);
      if (info.type == DType::F32) {
        std::memcpy(data + i, &v, 4);
      } else {
        const uint16_t h = info.type == DType::F16 ? hostlm::f32_to_f16(v) : hostlm::f32_to_bf16(v);
        std::memcpy(data + i, &h, 2);
      }
    }
    return;
  }
  uint64_t state = seed;
  for (size_t i = 0; i < bytes; i += 8) {  // splitmix64: fast enough for a 768 MiB pool
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(data + i, &z, std::min<size_t>(8, bytes - i));
  }
  std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
  for (size_t b = 0; b + tr.block_bytes <= bytes; b += tr.block_bytes) {
    if (info.type == DType::MXFP4) data[b] = static_cast<uint8_t>(118 + rng() % 4);  // E8M0
    for (int off : info.f16_fields) {
      const uint16_t h = hostlm::f32_to_f16(scale(rng));
      std::memcpy(data + b + off, &h, 2);
    }
  }
}

int bench_threads() {
  const char* env = std::getenv("HOSTLM_BENCH_THREADS");
  return env ? std::atoi(env) : 2;
}

void matvec(benchmark::State& state, const TypeInfo& info) {
  constexpr int64_t kRows = 4096, kCols = 2048;
  constexpr size_t kPoolBytes = size_t{768} << 20;
  const size_t matrix_bytes = *hostlm::dtype_bytes(info.type, kRows * kCols);
  const size_t n_matrices = std::max<size_t>(2, kPoolBytes / matrix_bytes);
  std::vector<uint8_t> pool(n_matrices * matrix_bytes);
  // One random matrix, copied: the copies are distinct memory all the same.
  fill(info, pool.data(), matrix_bytes, 1);
  for (size_t m = 1; m < n_matrices; ++m)
    std::memcpy(pool.data() + m * matrix_bytes, pool.data(), matrix_bytes);

  auto backend = hostlm::cpu::make_cpu_backend();
  backend->set_threads(bench_threads());
  std::vector<hostlm::Weight> weights;
  for (size_t m = 0; m < n_matrices; ++m) {
    hostlm::TensorView view;
    view.name = "bench.weight";
    view.type = info.type;
    view.shape = {kRows, kCols};
    view.data = pool.data() + m * matrix_bytes;
    view.nbytes = matrix_bytes;
    weights.push_back(backend->load_weight(view));
  }
  std::vector<float> x(kCols), y(kRows);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);

  size_t m = 0;
  for (auto _ : state) {
    backend->matmul(weights[m], x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
    m = (m + 1) % n_matrices;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * matrix_bytes));
  state.SetItemsProcessed(state.iterations() * kRows * kCols);
  state.counters["threads"] = bench_threads();
}

void dot(benchmark::State& state, const TypeInfo& info, hostlm::cpu::DotFn fn) {
  constexpr int64_t kRows = 256, kCols = 4096;
  const size_t row_bytes = *hostlm::dtype_bytes(info.type, kCols);
  std::vector<uint8_t> w(kRows * row_bytes);
  fill(info, w.data(), w.size(), 3);
  std::vector<float> x(kCols);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);
  for (auto _ : state) {
    float s = 0.f;
    for (int64_t r = 0; r < kRows; ++r) s += fn(w.data() + r * row_bytes, x.data(), kCols);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.size()));
  state.SetItemsProcessed(state.iterations() * kRows * kCols);
}

void dequant(benchmark::State& state, const TypeInfo& info, hostlm::cpu::RowToF32Fn fn) {
  constexpr int64_t kRows = 256, kCols = 4096;
  const size_t row_bytes = *hostlm::dtype_bytes(info.type, kCols);
  std::vector<uint8_t> w(kRows * row_bytes);
  fill(info, w.data(), w.size(), 3);
  std::vector<float> y(kCols);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) fn(w.data() + r * row_bytes, y.data(), kCols);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.size()));
  state.SetItemsProcessed(state.iterations() * kRows * kCols);
}

}  // namespace

int main(int argc, char** argv) {
  for (const TypeInfo& info : types()) {
    const std::string name(hostlm::dtype_name(info.type));
    benchmark::RegisterBenchmark(("Matvec/" + name + "/dram").c_str(),
                                 [&info](benchmark::State& s) { matvec(s, info); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    struct Path {
      const char* name;
      hostlm::cpu::DotFn fn;
    };
    const Path paths[] = {
        {"dispatched", hostlm::cpu::dot_kernel(info.type)},
        {"scalar", hostlm::cpu::quants::dot_scalar(info.type)},
        {"avx2",
         hostlm::cpu::quants::cpu_has_avx2() ? hostlm::cpu::quants::dot_avx2(info.type) : nullptr},
    };
    for (const Path& p : paths) {
      if (p.fn == nullptr) continue;
      const hostlm::cpu::DotFn fn = p.fn;
      benchmark::RegisterBenchmark(("Dot/" + name + "/" + p.name).c_str(),
                                   [&info, fn](benchmark::State& s) { dot(s, info, fn); })
          ->Unit(benchmark::kMicrosecond);
    }
    using hostlm::cpu::quants::cpu_has_avx2;
    const hostlm::cpu::RowToF32Fn rows[] = {
        hostlm::cpu::quants::row_to_f32_scalar(info.type),
        cpu_has_avx2() ? hostlm::cpu::quants::row_to_f32_avx2(info.type) : nullptr};
    const char* row_names[] = {"scalar", "avx2"};
    for (int k = 0; k < 2; ++k) {
      if (rows[k] == nullptr) continue;
      const hostlm::cpu::RowToF32Fn fn = rows[k];
      benchmark::RegisterBenchmark(("Dequant/" + name + "/" + row_names[k]).c_str(),
                                   [&info, fn](benchmark::State& s) { dequant(s, info, fn); })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
