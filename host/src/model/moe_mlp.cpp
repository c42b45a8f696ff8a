// The mixture-of-experts block of modules.h, routed on the host (each chosen expert run once
// over the rows routed to it) or on the backend (each token's experts combined into one
// SwiGLU product and one down product).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "hostlm/error.h"
#include "hostlm/modules.h"

namespace hostlm::modules {

MoeScratch::MoeScratch(Backend& backend, int64_t max_tokens, int64_t hidden, int64_t expert_ffn,
                       int64_t n_experts, int64_t n_used)
    : max_tokens_(max_tokens),
      hidden_(hidden),
      expert_ffn_(expert_ffn),
      n_experts_(n_experts),
      n_used_(n_used) {
  const auto rows = static_cast<size_t>(max_tokens * n_used);
  const auto tokens = static_cast<size_t>(max_tokens);
  const auto h = static_cast<size_t>(hidden);
  const auto sums = tokens * static_cast<size_t>(n_used + 1);
  gate_logits_ = backend.alloc(tokens * static_cast<size_t>(n_experts + 1));
  routed_in_ = backend.alloc(rows * h);
  expert_out_ = backend.alloc(sums * h);
  routed_gate_ = backend.alloc(rows * static_cast<size_t>(expert_ffn));
  routed_up_ = backend.alloc(rows * static_cast<size_t>(expert_ffn));
  host_gate_logits_.resize(tokens * static_cast<size_t>(n_experts + 1));
  row_token_.resize(rows);
  row_weight_.resize(rows);
  chosen_.resize(rows);
  weights_.resize(rows);
  probs_.resize(static_cast<size_t>(n_experts));
  order_.resize(static_cast<size_t>(n_experts));
  expert_rows_.resize(static_cast<size_t>(n_experts) + 1);
  next_row_.resize(static_cast<size_t>(n_experts));
  sum_rows_.resize(sums);
  sum_weights_.resize(sums);
  filled_.resize(tokens);
}

void MoeScratch::prepare(Backend& backend, const MoeMlp& block) {
  if (!block.routes_on_backend(backend, 1)) return;
  const int64_t k = n_used_, tokens = MoeMlp::kDeviceTokens;
  if (!device_ids_) {
    device_ids_ = backend.alloc(static_cast<size_t>(tokens * k));  // int32 in float slots
    device_weights_ = backend.alloc(static_cast<size_t>(tokens * k));
    const auto route_floats = static_cast<size_t>(max_tokens_ * (2 * k + 1));
    routes_ = backend.alloc(route_floats);
    host_routes_.resize(route_floats);
  }
  const int64_t width = block.gates.empty() ? 0 : block.gates.front().rows;
  if (width > widest_expert_) {
    widest_expert_ = width;
    combined_h_ = backend.alloc(static_cast<size_t>(k * width));
    combined_up_ = backend.alloc(static_cast<size_t>(k * width));
  }
  const std::vector<Weight>* roles[] = {&block.gates, &block.ups, &block.downs};
  for (int role = 0; role < 3; ++role) {
    const std::vector<Weight>& experts = *roles[role];
    if (experts.empty()) continue;
    const Weight& like = experts.front();
    const bool known = std::any_of(combined_.begin(), combined_.end(), [&](const Combined& c) {
      return c.role == role && c.type == like.type && c.rows == like.rows && c.cols == like.cols;
    });
    if (known) continue;
    const Weight w = backend.combined_weight(experts, k, role == 2);
    combined_.push_back({role, like.type, like.rows, like.cols, w});
    combined_bytes_ += w.row_bytes * static_cast<size_t>(w.rows);
  }
}

const Weight& MoeScratch::combined_for(int role, const Weight& like) const {
  for (const Combined& c : combined_)
    if (c.role == role && c.type == like.type && c.rows == like.rows && c.cols == like.cols)
      return c.weight;
  throw Error("mixture-of-experts block was not prepared for backend routing");
}

int64_t MoeScratch::floats() const {
  const int64_t rows = max_tokens_ * n_used_, sums = max_tokens_ * (n_used_ + 1);
  const int64_t logits = max_tokens_ * (n_experts_ + 1);
  const int64_t backend = logits + rows * hidden_ + sums * hidden_ + 2 * rows * expert_ffn_;
  // The backend's routes are on both sides; on the host also the logits, routes and sums.
  const auto routes = static_cast<int64_t>(host_routes_.size());
  return backend + logits + rows * 4 + sums * 2 + max_tokens_ + 2 * routes;
}

void route_experts(const float* logits, int64_t n_experts, int64_t n_used, int32_t* chosen,
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

void MoeMlp::forward(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T,
                     float* out) const {
  const int64_t E = router.rows, H = router.cols, k = n_used;
  const auto e = static_cast<size_t>(E);
  if (T > m.max_tokens_ || E != m.n_experts_ || H != m.hidden_ || k != m.n_used_ || gates.empty() ||
      gates.size() != e || ups.size() != e || downs.size() != e ||
      gates.front().rows > m.expert_ffn_)
    throw Error("mixture-of-experts block does not match its scratch");
  if (routes_on_backend(be, T))
    forward_backend_routed(be, s, m, x, T, out);
  else
    forward_host_routed(be, s, m, x, T, out);
}

// The router's logits [T, E], then the shared expert's gate [T] (in one product where the
// backend groups them) in m's buffer, which it returns.
float* MoeMlp::router_products(Backend& be, MoeScratch& m, const float* x, int64_t T) const {
  float* logits = m.gate_logits_->data();
  if (has_shared) {
    const MatmulOut products[] = {{&router, logits}, {&shared_gate, logits + T * router.rows}};
    be.matmul_same_input(products, x, T);
  } else {
    be.matmul(router, x, T, logits);
  }
  return logits;
}

void MoeMlp::forward_backend_routed(Backend& be, Scratch& s, MoeScratch& m, const float* x,
                                    int64_t T, float* out) const {
  const int64_t E = router.rows, H = router.cols, k = n_used, F = gates.front().rows;
  float* logits = router_products(be, m, x, T);
  float* gate = logits + T * E;
  auto* ids = reinterpret_cast<int32_t*>(m.device_ids_->data());
  float* weights = m.device_weights_->data();
  be.moe_route(logits, T, E, k, ids, weights);
  const Weight& g = m.combined_for(0, gates.front());
  const Weight& u = m.combined_for(1, ups.front());
  const Weight& d = m.combined_for(2, downs.front());
  float* h = m.combined_h_->data();
  // The products read the combined matrices as weights, which a GPU backend may start
  // loading before the op just before has finished (programmatic launch): so down's copy
  // stands between gate's and up's copies and the SwiGLU product, and the SwiGLU product and
  // the scaling between down's copy and the down product.
  for (int64_t t = 0; t < T; ++t) {
    be.combine_experts(gates, ids + t * k, k, false, g);
    be.combine_experts(ups, ids + t * k, k, false, u);
    be.combine_experts(downs, ids + t * k, k, true, d);
    be.matmul_swiglu(g, u, x + t * H, 1, h, m.combined_up_->data());
    be.scale_segments(h, weights + t * k, k, F);
    be.matmul(d, h, 1, out + t * H);
  }
  if (has_shared) {
    float* shared_out = m.expert_out_->data();
    shared.forward(be, s, x, T, shared_out);
    be.add_sigmoid_gated(out, shared_out, gate, T, H);
  }
}

void MoeMlp::forward_host_routed(Backend& be, Scratch& s, MoeScratch& m, const float* x, int64_t T,
                                 float* out) const {
  const int64_t E = router.rows, H = router.cols, k = n_used;
  const auto rows = static_cast<size_t>(T * k);

  // The routes (or the router's logits) and the shared expert's gate come back together: the
  // block's one wait.
  const float* logits = router_products(be, m, x, T);
  int32_t* chosen = m.chosen_.data();
  float* weights = m.weights_.data();
  const float* gate_logits = nullptr;  // [T] on the host
  if (m.routes_ && be.offers_device_routing(E)) {
    float* routes = m.routes_->data();
    be.moe_route(logits, T, E, k, reinterpret_cast<int32_t*>(routes), routes + rows);
    if (has_shared) be.copy_rows(routes + 2 * rows, 1, logits + T * E, 1, T, 1);
    float* host = m.host_routes_.data();
    be.download(host, routes, 2 * rows + (has_shared ? static_cast<size_t>(T) : 0));
    std::memcpy(chosen, host, rows * sizeof(int32_t));
    std::copy_n(host + rows, rows, weights);
    gate_logits = host + 2 * rows;
    for (size_t i = 0; i < rows; ++i)
      if (chosen[i] < 0 || chosen[i] >= E)
        throw Error("mixture-of-experts routing chose expert " + std::to_string(chosen[i]) +
                    " of " + std::to_string(E));
  } else {
    be.download(m.host_gate_logits_.data(), logits,
                static_cast<size_t>(T * (E + (has_shared ? 1 : 0))));
    const float* host_logits = m.host_gate_logits_.data();
    for (int64_t t = 0; t < T; ++t)
      route_experts(host_logits + t * E, E, k, chosen + t * k, weights + t * k, m.probs_, m.order_);
    gate_logits = host_logits + T * E;
  }

  // Rows grouped by expert (in token order within each): every chosen expert runs once.
  std::vector<int32_t>& first = m.expert_rows_;  // rows of expert e: [first[e], first[e + 1])
  std::fill(first.begin(), first.end(), 0);
  for (size_t i = 0; i < rows; ++i) ++first[static_cast<size_t>(chosen[i]) + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<int32_t>& next = m.next_row_;
  std::copy(first.begin(), first.end() - 1, next.begin());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const auto r = static_cast<size_t>(next[static_cast<size_t>(chosen[t * k + j])]++);
      m.row_token_[r] = static_cast<int32_t>(t);
      m.row_weight_[r] = weights[t * k + j];
    }
  be.gather_rows(m.routed_in_->data(), x, H, std::span<const int32_t>(m.row_token_.data(), rows));
  // Each expert over its rows: gate and up, one SwiGLU over every row, down.
  float* expert_out = m.expert_out_->data();
  float* gated = m.routed_gate_->data();
  be.matmul_experts(gates, first, m.routed_in_->data(), gated);
  be.matmul_experts(ups, first, m.routed_in_->data(), m.routed_up_->data());
  be.swiglu(gated, m.routed_up_->data(), gated, rows * static_cast<size_t>(gates.front().rows));
  be.matmul_experts(downs, first, gated, expert_out);
  if (has_shared) shared.forward(be, s, x, T, expert_out + static_cast<int64_t>(rows) * H);

  // Each token sums its rows in row order (experts ascending), then the shared expert's.
  const int64_t per_token = k + (has_shared ? 1 : 0);
  std::fill_n(m.filled_.data(), T, 0);
  for (size_t r = 0; r < rows; ++r) {
    const int32_t t = m.row_token_[r];
    const auto at = static_cast<size_t>(t * per_token + m.filled_[static_cast<size_t>(t)]++);
    m.sum_rows_[at] = static_cast<int32_t>(r);
    m.sum_weights_[at] = m.row_weight_[r];
  }
  if (has_shared)
    for (int64_t t = 0; t < T; ++t) {
      const auto at = static_cast<size_t>(t * per_token + k);
      m.sum_rows_[at] = static_cast<int32_t>(static_cast<int64_t>(rows) + t);
      m.sum_weights_[at] = 1.f / (1.f + std::exp(-gate_logits[t]));
    }
  const auto sums = static_cast<size_t>(T * per_token);
  be.weighted_row_sums(out, expert_out, H, T, per_token,
                       std::span<const int32_t>(m.sum_rows_.data(), sums),
                       std::span<const float>(m.sum_weights_.data(), sums));
}

}  // namespace hostlm::modules
