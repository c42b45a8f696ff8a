// Decode attention over a long paged KV cache on the CUDA backend: one query row (or a batch
// of sequences, one row each) attending to `context` cached tokens, through
// Backend::paged_attention as a full-attention layer calls it.
//
// Two layers' caches are cycled so that no call finds the keys in L2 (the 16K-token cache of
// one Qwen3.5 layer, 64 MiB, is larger than the H200's 50 MiB L2 only just). Pages are handed
// out in a shuffled order, as a pool shared by many sequences does. `calls` attentions are
// queued back to back and timed from the host around a final synchronising download (no CUDA
// graphs), so the figure includes each call's page-table upload outside a recorded step,
// about 40 us at 4K context on the H200 (session 29): compare variants at long context, or
// run with HOSTLM_CUDA_PROFILE=1 for the GPU time of the paged_attention op alone.
//   GB/s: key and value bytes read per second (the H200 copies at about 4.3 TB/s).
// Usage: bench_cuda_attention [CONTEXT ...]   (default 4096 16384 65536)
//   HOSTLM_BENCH_SHAPES=16x4,24x4   query heads x KV heads (default: the 9B's and the 27B's)
//   HOSTLM_BENCH_SEQS=1,32          sequences in the batch, one row each (default 1)
//   HOSTLM_BENCH_KV=f16|q8_0|f32    page type (default f16, the default KV type)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"
#include "hostlm/dtype.h"
#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace {

using hostlm::Backend;
using hostlm::DType;
using hostlm::KvPages;
using hostlm::PagedSequence;

constexpr int64_t kHeadDim = 256;  // every Qwen3.5 size
constexpr int64_t kLayers = 2;

using hostlm::bench::int_list;

size_t row_bytes(DType type, int64_t values) {
  return *hostlm::dtype_bytes(type, static_cast<uint64_t>(values));
}

struct Shape {
  int64_t n_head, n_head_kv;
};

void run(DType type, Shape shape, int64_t context, int64_t n_seqs) {
  auto backend = hostlm::create_backend("cuda");
  Backend& gpu = *backend;
  const int64_t width = shape.n_head_kv * kHeadDim;
  const size_t page_bytes = row_bytes(type, width) * hostlm::kKvPageTokens;
  const int64_t seq_pages = (context + 1 + hostlm::kKvPageTokens - 1) / hostlm::kKvPageTokens;
  const int64_t n_pages = seq_pages * n_seqs;
  const size_t page_floats = (page_bytes * static_cast<size_t>(n_pages) + 3) / 4;

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  constexpr int64_t kChunk = 512;
  std::vector<float> host(static_cast<size_t>(kChunk * width));
  for (float& v : host) v = normal(rng);
  auto k_rows = gpu.alloc(host.size()), v_rows = gpu.alloc(host.size());
  gpu.upload(k_rows->data(), host.data(), host.size());
  for (float& v : host) v = normal(rng);
  gpu.upload(v_rows->data(), host.data(), host.size());

  // Per layer: its K and V storage and each sequence's page table (a shuffled share of them).
  std::vector<std::unique_ptr<hostlm::Buffer>> storage;
  std::vector<KvPages> layers;
  std::vector<std::vector<int32_t>> tables;  // [layer * n_seqs + seq]
  for (int64_t l = 0; l < kLayers; ++l) {
    storage.push_back(gpu.alloc(page_floats));
    storage.push_back(gpu.alloc(page_floats));
    KvPages kv;
    kv.type = type;
    kv.n_head_kv = shape.n_head_kv;
    kv.head_dim = kHeadDim;
    kv.k = storage[storage.size() - 2]->data();
    kv.v = storage.back()->data();
    kv.page_bytes = page_bytes;
    layers.push_back(kv);
    std::vector<int32_t> order(static_cast<size_t>(n_pages));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t s = 0; s < n_seqs; ++s)
      tables.emplace_back(order.begin() + s * seq_pages, order.begin() + (s + 1) * seq_pages);
    // Fill each sequence's first `context` positions, kChunk rows at a time.
    for (int64_t s = 0; s < n_seqs; ++s)
      for (int64_t p = 0; p < context; p += kChunk) {
        const PagedSequence seq{kv, tables[static_cast<size_t>(l * n_seqs + s)].data(), 0,
                                std::min(kChunk, context - p), p};
        gpu.kv_store({&seq, 1}, k_rows->data(), v_rows->data());
      }
  }

  const int64_t q_width = shape.n_head * kHeadDim;
  std::vector<float> q(static_cast<size_t>(n_seqs * q_width));
  for (float& v : q) v = normal(rng);
  auto q_dev = gpu.alloc(q.size()), out = gpu.alloc(q.size());
  gpu.upload(q_dev->data(), q.data(), q.size());
  const float scale = 1.f / std::sqrt(static_cast<float>(kHeadDim));
  std::vector<std::vector<PagedSequence>> batches(kLayers);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t s = 0; s < n_seqs; ++s)
      batches[static_cast<size_t>(l)].push_back(
          PagedSequence{layers[static_cast<size_t>(l)],
                        tables[static_cast<size_t>(l * n_seqs + s)].data(), s, 1, context});
  auto attend = [&](int i) {
    const auto& seqs = batches[static_cast<size_t>(i % kLayers)];
    gpu.paged_attention(seqs, q_dev->data(), static_cast<size_t>(q_width), shape.n_head, scale,
                        out->data());
  };
  float sink = 0;
  for (int i = 0; i < 8; ++i) attend(i);
  gpu.download(&sink, out->data(), 1);
  const int calls = context >= 65536 ? 100 : 400;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) attend(i);
  gpu.download(&sink, out->data(), 1);
  const double sec =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
  const double bytes = 2.0 * static_cast<double>(row_bytes(type, width)) *
                       static_cast<double>((context + 1) * n_seqs);
  std::printf("%-5s heads %2lldx%lld  seqs %3lld  context %6lld  %9.2f us  %7.1f GB/s\n",
              std::string(hostlm::dtype_name(type)).c_str(), static_cast<long long>(shape.n_head),
              static_cast<long long>(shape.n_head_kv), static_cast<long long>(n_seqs),
              static_cast<long long>(context), sec * 1e6, bytes / sec / 1e9);
  std::fflush(stdout);
  if (!std::isfinite(sink)) throw hostlm::Error("attention gave a non-finite value");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<int64_t> contexts;
    for (int i = 1; i < argc; ++i) {
      const auto one = int_list(argv[i], "CONTEXT");
      contexts.insert(contexts.end(), one.begin(), one.end());
    }
    if (contexts.empty()) contexts = {4096, 16384, 65536};
    std::vector<Shape> shapes = {{16, 4}, {24, 4}};
    if (const char* env = std::getenv("HOSTLM_BENCH_SHAPES"); env && *env) {
      const auto v = int_list(env, "HOSTLM_BENCH_SHAPES");
      if (v.size() % 2 != 0) throw hostlm::Error("HOSTLM_BENCH_SHAPES: pairs HEADSxKV");
      shapes.clear();
      for (size_t i = 0; i < v.size(); i += 2) shapes.push_back({v[i], v[i + 1]});
    }
    std::vector<int64_t> seqs = {1};
    if (const char* env = std::getenv("HOSTLM_BENCH_SEQS"); env && *env)
      seqs = int_list(env, "HOSTLM_BENCH_SEQS");
    DType type = DType::F16;
    if (const char* env = std::getenv("HOSTLM_BENCH_KV"); env && *env) {
      const std::string name = env;
      type = name == "q8_0" ? DType::Q8_0 : name == "f32" ? DType::F32 : DType::F16;
    }
    for (Shape shape : shapes)
      for (int64_t n : seqs)
        for (int64_t context : contexts) run(type, shape, context, n);
  } catch (const hostlm::Error& e) {
    std::fprintf(stderr, "bench_cuda_attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
