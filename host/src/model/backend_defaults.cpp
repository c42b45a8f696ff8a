// Default bodies of Backend ops that are too long to sit in ops.h.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hostlm/error.h"
#include "hostlm/ops.h"

namespace hostlm {

// Correct on any backend, fast on none: both backends override it. Allocates, since a backend
// that takes this path has no scratch for it.
void Backend::weighted_row_sums(float* out, const float* src, int64_t width, int64_t T, int64_t m,
                                std::span<const int32_t> rows, std::span<const float> weights) {
  const auto n = static_cast<size_t>(T * m);
  if (rows.size() != n || weights.size() != n)
    throw Error("weighted_row_sums: " + std::to_string(n) + " rows and weights expected");
  const auto w = static_cast<size_t>(width);
  std::vector<float> row(w), sums(static_cast<size_t>(T) * w, 0.f);
  for (size_t t = 0; t < static_cast<size_t>(T); ++t)
    for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
      const size_t i = t * static_cast<size_t>(m) + j;
      download(row.data(), src + int64_t{rows[i]} * width, w);
      float* dst = sums.data() + t * w;
      for (size_t d = 0; d < w; ++d) dst[d] += weights[i] * row[d];
    }
  upload(out, sums.data(), sums.size());
}

void Backend::matmul_experts(std::span<const Weight> experts, std::span<const int32_t> first,
                             const float* x, float* y) {
  if (first.size() != experts.size() + 1)
    throw Error("matmul_experts: " + std::to_string(experts.size() + 1) + " row offsets expected");
  for (size_t e = 0; e < experts.size(); ++e) {
    const int64_t r0 = first[e], n = first[e + 1] - r0;
    if (n > 0) matmul(experts[e], x + r0 * experts[e].cols, n, y + r0 * experts[e].rows);
  }
}

namespace {
[[noreturn]] void not_offered(const Backend& b, const char* op) {
  throw Error(std::string(op) + ": the " + b.name() +
              " backend does not route experts on its own (offers_device_routing)");
}
}  // namespace

void Backend::moe_route(const float*, int64_t, int64_t, int64_t, int32_t*, float*) {
  not_offered(*this, "moe_route");
}
Weight Backend::combined_weight(std::span<const Weight>, int64_t, bool) {
  not_offered(*this, "combined_weight");
}
void Backend::combine_experts(std::span<const Weight>, const int32_t*, int64_t, bool,
                              const Weight&) {
  not_offered(*this, "combine_experts");
}
void Backend::scale_segments(float*, const float*, int64_t, int64_t) {
  not_offered(*this, "scale_segments");
}
void Backend::add_sigmoid_gated(float*, const float*, const float*, int64_t, int64_t) {
  not_offered(*this, "add_sigmoid_gated");
}

}  // namespace hostlm
