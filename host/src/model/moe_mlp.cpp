// The mixture-of-experts block of modules.h: routing on the host, each chosen expert run once
// over the rows routed to it.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "hostlm/error.h"
#include "hostlm/modules.h"

namespace hostlm::modules {

MoeScratch::MoeScratch(Backend& backend, int64_t max_tokens, int64_t hidden, int64_t n_experts,
                       int64_t n_used)
    : max_tokens_(max_tokens), hidden_(hidden), n_experts_(n_experts), n_used_(n_used) {
  const auto rows = static_cast<size_t>(max_tokens * n_used);
  const auto tokens = static_cast<size_t>(max_tokens);
  const auto h = static_cast<size_t>(hidden);
  logits_ = backend.alloc(tokens * static_cast<size_t>(n_experts));
  routed_in_ = backend.alloc(rows * h);
  routed_out_ = backend.alloc(rows * h);
  shared_out_ = backend.alloc(tokens * h);
  shared_gate_ = backend.alloc(tokens);
  host_logits_.resize(tokens * static_cast<size_t>(n_experts));
  host_routed_.resize(rows * h);
  host_out_.resize(tokens * h);
  host_shared_.resize(tokens * h);
  host_gate_.resize(tokens);
  row_token_.resize(rows);
  row_weight_.resize(rows);
  chosen_.resize(rows);
  weights_.resize(rows);
  probs_.resize(static_cast<size_t>(n_experts));
  order_.resize(static_cast<size_t>(n_experts));
  expert_rows_.resize(static_cast<size_t>(n_experts) + 1);
  next_row_.resize(static_cast<size_t>(n_experts));
}

int64_t MoeScratch::floats() const {
  const int64_t rows = max_tokens_ * n_used_;
  const int64_t backend =
      max_tokens_ * n_experts_ + 2 * rows * hidden_ + max_tokens_ * hidden_ + max_tokens_;
  return 2 * backend - rows * hidden_ + rows * 4;  // host mirrors (not of the routed input), routes
}

namespace {

// Experts of one token: the n_used largest softmax probabilities, renormalised to sum 1, in
// float32 as transformers computes them. Equal probabilities go to the lower index.
void route_token(const float* logits, int64_t n_experts, int64_t n_used, int32_t* chosen,
                 float* weights, std::vector<float>& probs, std::vector<int32_t>& order) {
  const float top = *std::max_element(logits, logits + n_experts);
  float sum = 0.f;
  for (int64_t e = 0; e < n_experts; ++e) {
    probs[static_cast<size_t>(e)] = std::exp(logits[e] - top);
    sum += probs[static_cast<size_t>(e)];
  }
  // A NaN (broken weights or inputs) ranks last, so the sort below keeps a strict order.
  for (int64_t e = 0; e < n_experts; ++e) {
    float& p = probs[static_cast<size_t>(e)];
    p = std::isnan(p / sum) ? -1.f : p / sum;
  }
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&](int32_t a, int32_t b) {
    const float pa = probs[static_cast<size_t>(a)], pb = probs[static_cast<size_t>(b)];
    return pa != pb ? pa > pb : a < b;
  });
  float chosen_sum = 0.f;
  for (int64_t j = 0; j < n_used; ++j) chosen_sum += probs[static_cast<size_t>(order[j])];
  for (int64_t j = 0; j < n_used; ++j) {
    chosen[j] = order[static_cast<size_t>(j)];
    weights[j] = probs[static_cast<size_t>(order[j])] / chosen_sum;
  }
}

}  // namespace

void MoeMlp::forward(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T,
                     float* out) const {
  const int64_t E = router.rows, H = router.cols, k = n_used;
  if (T > m.max_tokens_ || E != m.n_experts_ || H != m.hidden_ || k != m.n_used_ ||
      static_cast<int64_t>(experts.size()) != E)
    throw Error("mixture-of-experts block does not match its scratch");
  const auto h = static_cast<size_t>(H);

  // Routes: for every token its k experts and weights, then the rows grouped by expert (in
  // token order within each), which is the order the experts' outputs are summed in.
  be.matmul(router, x, T, m.logits_->data());
  be.download(m.host_logits_.data(), m.logits_->data(), static_cast<size_t>(T * E));
  int32_t* chosen = m.chosen_.data();
  float* weights = m.weights_.data();
  for (int64_t t = 0; t < T; ++t)
    route_token(m.host_logits_.data() + t * E, E, k, chosen + t * k, weights + t * k, m.probs_,
                m.order_);
  std::vector<int32_t>& first = m.expert_rows_;  // rows of expert e: [first[e], first[e + 1])
  std::fill(first.begin(), first.end(), 0);
  for (int64_t i = 0; i < T * k; ++i) ++first[static_cast<size_t>(chosen[i]) + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<int32_t>& next = m.next_row_;
  std::copy(first.begin(), first.end() - 1, next.begin());
  // Each token's row goes to its experts' places, backend to backend (a copy on the CPU).
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t r = next[static_cast<size_t>(chosen[t * k + j])]++;
      m.row_token_[static_cast<size_t>(r)] = static_cast<int32_t>(t);
      m.row_weight_[static_cast<size_t>(r)] = weights[t * k + j];
      be.copy_rows(m.routed_in_->data() + int64_t{r} * H, h, x + t * H, h, 1, H);
    }
  const auto rows = static_cast<size_t>(T * k);

  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = first[static_cast<size_t>(e)], n = first[static_cast<size_t>(e) + 1] - r0;
    if (n > 0)
      experts[static_cast<size_t>(e)].forward(be, s, m.routed_in_->data() + r0 * H, n,
                                              m.routed_out_->data() + r0 * H);
  }
  be.download(m.host_routed_.data(), m.routed_out_->data(), rows * h);

  std::fill_n(m.host_out_.data(), static_cast<size_t>(T) * h, 0.f);
  for (size_t r = 0; r < rows; ++r) {
    float* dst = m.host_out_.data() + static_cast<size_t>(m.row_token_[r]) * h;
    const float* src = m.host_routed_.data() + r * h;
    const float w = m.row_weight_[r];
    for (size_t i = 0; i < h; ++i) dst[i] += src[i] * w;
  }
  if (has_shared) {
    shared.forward(be, s, x, T, m.shared_out_->data());
    be.matmul(shared_gate, x, T, m.shared_gate_->data());
    be.download(m.host_shared_.data(), m.shared_out_->data(), static_cast<size_t>(T) * h);
    be.download(m.host_gate_.data(), m.shared_gate_->data(), static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
      const float g = 1.f / (1.f + std::exp(-m.host_gate_[static_cast<size_t>(t)]));
      float* dst = m.host_out_.data() + t * H;
      const float* src = m.host_shared_.data() + t * H;
      for (size_t i = 0; i < h; ++i) dst[i] += g * src[i];
    }
  }
  be.upload(out, m.host_out_.data(), static_cast<size_t>(T) * h);
}

}  // namespace hostlm::modules
