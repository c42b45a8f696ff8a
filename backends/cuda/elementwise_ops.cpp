// CudaBackend's ops of one simple kernel each: fill, copy_rows, the embedding lookup, and the
// elementwise add, mul_sigmoid and swiglu.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "hostlm/error.h"

namespace hostlm::cuda {

void CudaBackend::fill(float* dst, float value, size_t n) {
  const auto timed = profile_->scope("fill");
  forget_acts();
  if (skip(kFill, dst, value, n)) return;
  check(cuda::fill(dst, value, n, stream_), "fill");
}

void CudaBackend::copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride,
                            int64_t rows, int64_t n) {
  const auto timed = profile_->scope("copy_rows");
  forget_acts();
  if (rows == 0 || n == 0) return;
  if (skip(kCopyRows, dst, dst_stride, src, src_stride, rows, n)) return;
  check(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src, src_stride * sizeof(float),
                          static_cast<size_t>(n) * sizeof(float), static_cast<size_t>(rows),
                          cudaMemcpyDeviceToDevice, stream_),
        "copy_rows");
}

// A mixture-of-experts block decides its routes on the host between its ops, so these two
// never run inside a recorded step; refusing there keeps their staging out of the steps'.
void CudaBackend::gather_rows(float* dst, const float* src, int64_t width,
                              std::span<const int32_t> rows) {
  const auto timed = profile_->scope("gather_rows");
  forget_acts();
  if (!runs_live()) throw Error("gather_rows: not available inside a recorded decode step");
  if (rows.empty() || width == 0) return;
  const int32_t* device_rows = route_rows_.upload(rows.data(), rows.size(), stream_, false, mode_);
  check(cuda::gather_rows(dst, src, width, device_rows, static_cast<int64_t>(rows.size()), stream_),
        "gather_rows");
}

void CudaBackend::weighted_row_sums(float* out, const float* src, int64_t width, int64_t T,
                                    int64_t m, std::span<const int32_t> rows,
                                    std::span<const float> weights) {
  const auto timed = profile_->scope("weighted_row_sums");
  forget_acts();
  if (!runs_live()) throw Error("weighted_row_sums: not available inside a recorded decode step");
  const auto n = static_cast<size_t>(T * m);
  if (rows.size() != n || weights.size() != n)
    throw Error("weighted_row_sums: " + std::to_string(n) + " rows and weights expected");
  if (T == 0 || width == 0) return;
  const int32_t* device_rows = route_rows_.upload(rows.data(), n, stream_, false, mode_);
  const auto* device_weights = static_cast<const float*>(
      route_weights_.upload(weights.data(), n * sizeof(float), stream_, mode_));
  check(cuda::weighted_row_sums(out, src, width, T, m, device_rows, device_weights, stream_),
        "weighted_row_sums");
}

void CudaBackend::embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) {
  const auto timed = profile_->scope("embed");
  forget_acts();
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t] < 0 || tokens[t] >= table.rows)
      throw Error("token id " + std::to_string(tokens[t]) + " is outside the vocabulary (0.." +
                  std::to_string(table.rows - 1) + ")");
  if (T == 0) return;
  const int32_t* device_tokens =
      tokens_.upload(tokens, static_cast<size_t>(T), stream_, false, mode_);
  if (device_tokens == nullptr) return replay_cannot();
  if (ahead_walk_) {  // launch_ahead puts the real ids there
    ahead_.token_offset = tokens_.last_offset();
    ahead_.tokens = ahead_.tokens == 0 ? static_cast<size_t>(T) : SIZE_MAX;
    ahead_.vocab = table.rows;
  }
  if (skip(kEmbed, table.data, table.type, table.cols, T, out, device_tokens)) return;
  if (quants::QuantMatmul::supports(table.type)) return quant_->embed(table, device_tokens, T, out);
  check(cuda::embed(table.type, table.data, table.row_bytes, table.cols, device_tokens, T, out,
                    stream_),
        "embed");
}

void CudaBackend::add(float* x, const float* y, size_t n) {
  const auto timed = profile_->scope("add");
  forget_acts();
  if (skip(kAdd, x, y, n)) return;
  check(cuda::add(x, y, n, stream_), "add");
}

void CudaBackend::mul_sigmoid(float* x, const float* gate, size_t gate_stride, int64_t T,
                              int64_t n) {
  const auto timed = profile_->scope("mul_sigmoid");
  const bool early_gate =
      T > 0 && last_writes_.untouched(
                   gate, static_cast<size_t>(T - 1) * gate_stride + static_cast<size_t>(n));
  forget_acts();
  const cuda::Int8ActsOut acts = quant_->produce_acts(x, T * n);
  if (skip(kMulSigmoid, x, gate, gate_stride, T, n, acts.q, early_gate)) return;
  check(cuda::mul_sigmoid(x, gate, gate_stride, T, n, stream_, acts, early_gate), "mul_sigmoid");
}

void CudaBackend::swiglu(const float* gate, const float* up, float* out, size_t n) {
  const auto timed = profile_->scope("swiglu");
  forget_acts();
  const cuda::Int8ActsOut acts = quant_->produce_acts(out, static_cast<int64_t>(n));
  if (skip(kSwiglu, gate, up, out, n, acts.q)) return;
  check(cuda::swiglu(gate, up, out, n, stream_, acts), "swiglu");
}

}  // namespace hostlm::cuda
