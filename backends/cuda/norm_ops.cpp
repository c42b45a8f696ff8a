// CudaBackend's RMS norms: plain, after a residual add (deferred into the next product when
// QuantMatmul folds norms), and gated; each may write its output quantized for the decode
// GEMV that reads it next (norm_acts).
#include "cuda/check.h"
#include "cuda/cuda_backend.h"

namespace hostlm::cuda {

void CudaBackend::rms_norm(const float* x, size_t x_stride, float* out, size_t out_stride,
                           int64_t rows, int64_t n, const float* weight, float eps) {
  const auto timed = profile_->scope("rms_norm");
  forget_acts();
  const float* w = host_array(weight, static_cast<size_t>(n));
  if (rows == 1 && x_stride == static_cast<size_t>(n) && out_stride == x_stride &&
      quant_->can_defer_norm(n)) {
    if (skip(kRmsNorm, x, x_stride, out, out_stride, rows, n, w, eps, nullptr)) return;
    quant_->defer_norm(const_cast<float*>(x), nullptr, w, eps, n, out);
    return;
  }
  const cuda::Int8ActsOut acts =
      out_stride == static_cast<size_t>(n) ? norm_acts(out, rows, n) : cuda::Int8ActsOut{};
  if (skip(kRmsNorm, x, x_stride, out, out_stride, rows, n, w, eps, acts.q)) return;
  check(cuda::rms_norm(x, x_stride, out, out_stride, rows, n, w, eps, stream_, acts), "rms_norm");
}

void CudaBackend::add_rms_norm(float* x, const float* y, int64_t rows, int64_t n,
                               const float* weight, float eps, float* out) {
  const auto timed = profile_->scope("add_rms_norm");
  const bool early_x = last_writes_.untouched(x, static_cast<size_t>(rows * n));
  forget_acts();
  const float* w = host_array(weight, static_cast<size_t>(n));
  // One row (a decode step): folded into the product that reads `out` next, if one does.
  if (rows == 1 && quant_->can_defer_norm(n)) {
    if (skip(kAddRmsNorm, x, y, rows, n, w, eps, out, nullptr)) return;
    quant_->defer_norm(x, y, w, eps, n, out);
    return;
  }
  const cuda::Int8ActsOut acts = norm_acts(out, rows, n);
  if (skip(kAddRmsNorm, x, y, rows, n, w, eps, out, acts.q, early_x)) return;
  check(cuda::add_rms_norm(x, y, rows, n, w, eps, out, stream_, acts, early_x), "add_rms_norm");
}

void CudaBackend::gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows,
                                 int64_t dv, float eps, float* out) {
  const auto timed = profile_->scope("gated_rms_norm");
  const bool early_z = last_writes_.untouched(z, static_cast<size_t>(rows * dv));
  forget_acts();
  const float* w = host_array(weight, static_cast<size_t>(dv));
  const cuda::Int8ActsOut acts =
      dv % 32 == 0 ? quant_->produce_acts(out, rows * dv) : cuda::Int8ActsOut{};
  if (skip(kGatedRmsNorm, x, z, w, rows, dv, eps, out, acts.q, early_z)) return;
  check(cuda::gated_rms_norm(x, z, w, rows, dv, eps, out, stream_, acts, early_z),
        "gated_rms_norm");
}

// The decode GEMV's quantized copy of a norm's output, written by the norm itself when the
// rows are few enough for the GEMV to read it (QuantMatmul::produce_acts).
cuda::Int8ActsOut CudaBackend::norm_acts(const float* out, int64_t rows, int64_t n) {
  if (!quant_->groups(rows) || n > cuda::kNormQuantizeMax || n % 32 != 0) return {};
  return quant_->produce_acts(out, rows * n);
}

}  // namespace hostlm::cuda
