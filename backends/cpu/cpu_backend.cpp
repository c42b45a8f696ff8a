#include "cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cpu/conv1d.h"
#include "cpu/delta_rule.h"
#include "cpu/dot.h"
#include "cpu/paged_kv.h"
#include "cpu/quants/qgemm.h"
#include "cpu/thread_pool.h"
#include "hostlm/best_logits.h"
#include "hostlm/error.h"
#include "hostlm/modules.h"

namespace hostlm::cpu {
namespace {

// Zeroed by calloc, so the operating system hands out pages only when they are first
// touched: a KV page pool sized for a long context costs nothing until it fills. The data
// starts on a 64-byte cache line (calloc gives 16), so whole-line vectors over a recurrent
// state or a KV page never straddle two lines.
class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(size_t n)
      : raw_(std::calloc(std::max<size_t>(n, 1) + kLineFloats, sizeof(float))), size_(n) {
    if (!raw_) throw std::bad_alloc();
    const auto at = reinterpret_cast<uintptr_t>(raw_);
    data_ = reinterpret_cast<float*>((at + kLineBytes - 1) & ~uintptr_t{kLineBytes - 1});
  }
  ~HostBuffer() override { std::free(raw_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  float* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  static constexpr size_t kLineBytes = 64, kLineFloats = kLineBytes / sizeof(float);
  void* raw_;
  float* data_;
  size_t size_;
};

inline float silu(float x) { return x / (1.f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// Scratch that grows to the largest request and is then reused, so steady-state decode
// allocates nothing.
std::vector<float>& thread_scratch(size_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : pool_(std::make_unique<ThreadPool>(default_threads())) {}

  std::string name() const override { return "cpu"; }

  void set_threads(int n) override {
    if (n <= 0) n = default_threads();
    if (n != pool_->size()) pool_ = std::make_unique<ThreadPool>(n);
  }

  Weight load_weight(const TensorView& view) override {
    if (!dot_kernel(view.type))
      throw Error("tensor '" + view.name + "' has type " + std::string(dtype_name(view.type)) +
                  ", which the CPU backend cannot compute with yet");
    Weight w;
    w.type = view.type;
    w.cols = view.cols();
    w.rows = view.rows();
    w.data = view.data;
    w.row_bytes = view.nbytes / static_cast<size_t>(std::max<int64_t>(1, w.rows));
    return w;
  }

  std::unique_ptr<Buffer> alloc(size_t n) override { return std::make_unique<HostBuffer>(n); }
  void upload(float* dst, const float* src, size_t n) override {
    std::memcpy(dst, src, n * sizeof(float));
  }
  void download(float* dst, const float* src, size_t n) override {
    std::memcpy(dst, src, n * sizeof(float));
  }
  void fill(float* dst, float value, size_t n) override { std::fill(dst, dst + n, value); }
  void best_logits_rows(std::span<float* const> values, std::span<int32_t* const> ids,
                        const float* src, size_t n, size_t k) override {
    if (ids.size() != values.size()) throw Error("best_logits_rows: as many id rows as value rows");
    for (size_t i = 0; i < values.size(); ++i)
      best_logits(std::span<const float>(src + i * n, n), k, values[i], ids[i]);
  }
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, int64_t rows,
                 int64_t n) override {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + r * dst_stride, src + r * src_stride, n * sizeof(float));
  }

  void weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                         std::span<const int32_t> rows, std::span<const float> weights) override {
    const auto n = static_cast<size_t>(T * m);
    if (rows.size() != n || weights.size() != n)
      throw Error("weighted_row_sums: " + std::to_string(n) + " rows and weights expected");
    for (int64_t t = 0; t < T; ++t) {
      float* dst = out + t * width;
      std::fill_n(dst, width, 0.f);
      for (int64_t j = 0; j < m; ++j) {
        const auto i = static_cast<size_t>(t * m + j);
        const float* row = src + int64_t{rows[i]} * width;
        const float w = weights[i];
        for (int64_t d = 0; d < width; ++d) dst[d] += row[d] * w;
      }
    }
  }

  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    const RowToF32Fn to_f32 = row_to_f32_kernel(table.type);
    for (int64_t t = 0; t < T; ++t) {
      if (tokens[t] < 0 || tokens[t] >= table.rows)
        throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary (0.." +
                    std::to_string(table.rows - 1) + ")");
      to_f32(static_cast<const uint8_t*>(table.data) + table.row_bytes * tokens[t],
             out + t * table.cols, table.cols);
    }
  }

  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    if (const quants::QGemm* k = quants::qgemm_best(w.type)) {
      matmul_quantized(*k, w, x, T, y);
      return;
    }
    const DotFn dot = dot_kernel(w.type);
    const DotFn dot_f32 = dot_kernel(DType::F32);
    const RowToF32Fn to_f32 = row_to_f32_kernel(w.type);
    // With several tokens a stored row is expanded to float32 once and reused for each
    // token; a single token (decode) reads the stored row directly.
    const bool expand = T >= 4 && w.type != DType::F32 && to_f32 != nullptr;
    const auto* base = static_cast<const uint8_t*>(w.data);
    pool_->parallel_for(w.rows, 16, [&](int64_t r0, int64_t r1) {
      float* row_f32 = expand ? thread_scratch(static_cast<size_t>(w.cols)).data() : nullptr;
      for (int64_t r = r0; r < r1; ++r) {
        const void* row = base + w.row_bytes * r;
        if (expand) {
          to_f32(row, row_f32, w.cols);
          for (int64_t t = 0; t < T; ++t)
            y[t * w.rows + r] = dot_f32(row_f32, x + t * w.cols, w.cols);
        } else {
          for (int64_t t = 0; t < T; ++t) y[t * w.rows + r] = dot(row, x + t * w.cols, w.cols);
        }
      }
    });
  }

  // Block-quantized weights: the activations are quantized to 8 bits once per call (into a
  // buffer that grows to the largest batch and is then reused), then every thread runs the
  // integer kernel over its share of the rows for all tokens. Batches of 8 or more tokens
  // use the packed form (8 tokens interleaved) where the instruction set has one.
  void matmul_quantized(const quants::QGemm& k, const Weight& w, const float* x, int64_t T,
                        float* y) {
    const int64_t n_blocks = w.cols / dtype_traits(w.type).block_size;
    const auto* base = static_cast<const uint8_t*>(w.data);
    const auto rows_stride = static_cast<size_t>(w.rows);
    if (k.gemm_packed != nullptr && T >= quants::kPackTokens) {
      const int64_t n_groups = (T + quants::kPackTokens - 1) / quants::kPackTokens;
      const size_t group_bytes = quants::packed_group_bytes(k.act, w.cols);
      if (act_.size() < group_bytes * static_cast<size_t>(n_groups))
        act_.resize(group_bytes * static_cast<size_t>(n_groups));
      uint8_t* packed = act_.data();
      pool_->parallel_for(n_groups, 1, [&](int64_t g0, int64_t g1) {
        quants::pack_acts(k.act, x, w.cols, T, g0 * quants::kPackTokens,
                          std::min(T, g1 * quants::kPackTokens), packed);
      });
      pool_->parallel_for(w.rows, 16, [&](int64_t r0, int64_t r1) {
        k.gemm_packed(base + w.row_bytes * r0, w.row_bytes, r1 - r0, packed, T, n_blocks, y + r0,
                      rows_stride);
      });
      return;
    }
    const size_t act_stride = quants::act_row_bytes(k.act, w.cols);
    if (act_.size() < act_stride * static_cast<size_t>(T))
      act_.resize(act_stride * static_cast<size_t>(T));
    uint8_t* act = act_.data();
    pool_->parallel_for(T, 8, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        quants::quantize_act_row(k.act, x + t * w.cols, act + t * act_stride, w.cols);
    });
    pool_->parallel_for(w.rows, 8, [&](int64_t r0, int64_t r1) {
      k.gemm(base + w.row_bytes * r0, w.row_bytes, r1 - r0, act, act_stride, T, n_blocks, y + r0,
             rows_stride);
    });
  }

  void add(float* x, const float* y, size_t n) override {
    for (size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  void rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride, int64_t rows,
                int64_t n, const float* weight, float eps) override {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * x_stride;
      float* o = out + r * out_stride;
      double ss = 0.0;
      for (int64_t i = 0; i < n; ++i) ss += double{xr[i]} * xr[i];
      const float inv = 1.f / std::sqrt(static_cast<float>(ss / n) + eps);
      for (int64_t i = 0; i < n; ++i) o[i] = xr[i] * inv * weight[i];
    }
  }

  void rope_neox(float* x, size_t token_stride, int64_t T, int64_t n_heads, size_t head_stride,
                 int64_t rot_dims, const int32_t* positions, double theta) override {
    const int64_t half = rot_dims / 2;
    std::vector<float>& cs = thread_scratch(2 * half);
    for (int64_t t = 0; t < T; ++t) {
      // Angles in double: at positions near 262144 a float32 product loses whole radians.
      for (int64_t i = 0; i < half; ++i) {
        const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / rot_dims);
        const double angle = static_cast<double>(positions[t]) * inv_freq;
        cs[2 * i] = static_cast<float>(std::cos(angle));
        cs[2 * i + 1] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + t * token_stride + h * head_stride;
        for (int64_t i = 0; i < half; ++i) {
          const float c = cs[2 * i], s = cs[2 * i + 1];
          const float x0 = v[i], x1 = v[i + half];
          v[i] = x0 * c - x1 * s;
          v[i + half] = x1 * c + x0 * s;
        }
      }
    }
  }

  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override {
    cpu::kv_store(seqs, k, v);
  }

  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t q_stride,
                       int64_t n_head, float scale, float* out) override {
    cpu::paged_attention(*pool_, seqs, q, q_stride, n_head, scale, out);
  }

  void mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T, int64_t n) override {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i) x[t * n + i] *= sigmoid(gate[t * gate_stride + i]);
  }

  void swiglu(const float* gate, const float* up, float* out, size_t n) override {
    for (size_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
  }

  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* conv_state, float* out) override {
    cpu::conv1d_silu(*pool_, {x, T, channels, K, weight, conv_state, out});
  }

  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override {
    cpu::conv1d_silu_seqs(*pool_, seqs, x, channels, K, weight, out);
  }

  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta_raw,
                        const float* a_neg, const float* dt_bias, int64_t T,
                        const DeltaRuleShape& sh, float* state, float* out) override {
    cpu::gated_delta_rule(*pool_, {qkv, alpha, beta_raw, a_neg, dt_bias, T, sh, state, out});
  }

  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta_raw, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& shape,
                             float* out) override {
    cpu::gated_delta_rule_seqs(*pool_, seqs, qkv, alpha, beta_raw, a_neg, dt_bias, shape, out);
  }

  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * dv;
      const float* zr = z + r * dv;
      float ss = 0.f;
      for (int64_t i = 0; i < dv; ++i) ss += xr[i] * xr[i];
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(dv) + eps);
      for (int64_t i = 0; i < dv; ++i) out[r * dv + i] = xr[i] * inv * weight[i] * silu(zr[i]);
    }
  }

  // The ops of a mixture-of-experts block routed on the backend (ops.h). The CPU does not
  // offer them to blocks (offers_device_routing stays false: host routing runs each expert
  // once over all of its rows, and copying experts costs more than it saves here), but they
  // work, for tests that run that path on the CPU.
  void moe_route(const float* logits, int64_t T, int64_t E, int64_t n_used, int32_t* ids,
                 float* weights) override {
    if (E < 1 || n_used < 1 || n_used > E)
      throw Error("moe_route: " + std::to_string(n_used) + " of " + std::to_string(E) +
                  " experts per token");
    route_probs_.resize(static_cast<size_t>(E));
    route_order_.resize(static_cast<size_t>(E));
    for (int64_t t = 0; t < T; ++t)
      modules::route_experts(logits + t * E, E, n_used, ids + t * n_used, weights + t * n_used,
                             route_probs_, route_order_);
  }
  Weight combined_weight(std::span<const Weight> experts, int64_t n, bool side_by_side) override {
    if (experts.empty() || n < 1) throw Error("combined_weight: no experts");
    Weight w = experts.front();
    const size_t bytes = w.row_bytes * static_cast<size_t>(w.rows * n);
    if (side_by_side) {
      w.cols *= n;
      w.row_bytes *= static_cast<size_t>(n);
    } else {
      w.rows *= n;
    }
    w.data = combined_.emplace_back(std::make_unique<uint8_t[]>(bytes)).get();
    return w;
  }
  void combine_experts(std::span<const Weight> experts, const int32_t* ids, int64_t n,
                       bool side_by_side, const Weight& combined) override {
    auto* out = static_cast<uint8_t*>(const_cast<void*>(combined.data));
    for (int64_t j = 0; j < n; ++j) {
      if (ids[j] < 0 || static_cast<size_t>(ids[j]) >= experts.size())
        throw Error("combine_experts: expert " + std::to_string(ids[j]) + " of " +
                    std::to_string(experts.size()));
      const Weight& e = experts[static_cast<size_t>(ids[j])];
      const auto* in = static_cast<const uint8_t*>(e.data);
      for (int64_t r = 0; r < e.rows; ++r) {
        const int64_t place = side_by_side ? r * n + j : j * e.rows + r;
        std::memcpy(out + static_cast<size_t>(place) * e.row_bytes,
                    in + static_cast<size_t>(r) * e.row_bytes, e.row_bytes);
      }
    }
  }
  void scale_segments(float* x, const float* weights, int64_t n, int64_t width) override {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < width; ++i) x[j * width + i] *= weights[j];
  }
  void add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T,
                         int64_t n) override {
    for (int64_t t = 0; t < T; ++t) {
      const float g = 1.f / (1.f + std::exp(-gate[t]));
      for (int64_t i = 0; i < n; ++i) out[t * n + i] += g * y[t * n + i];
    }
  }

 private:
  static int default_threads() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
  }

  std::unique_ptr<ThreadPool> pool_;
  std::vector<uint8_t> act_;  // quantized activations of the current matmul
  std::vector<float> route_probs_;
  std::vector<int32_t> route_order_;
  std::vector<std::unique_ptr<uint8_t[]>> combined_;  // combined_weight's matrices
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace hostlm::cpu
