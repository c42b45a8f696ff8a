// For the tests of the model's side of the backend's step contract (begin_step/end_step,
// begin_step_ahead/launch_ahead) on the CPU: a backend that hands every op to another through
// one hook, one that also offers routing mixture-of-experts blocks on the backend, and a
// two-sequence decode schedule.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "hostlm/modules.h"
#include "hostlm/ops.h"
#include "hostlm/plugin_api.h"
#include "reference_data.h"

namespace hostlm::testing {

// Every op goes to `inner` through issue(), which runs it at once; a test overrides issue() to
// drop or keep ops. What a GPU step uploads when an op is issued (positions, the sequences'
// lengths and page tables) is copied into the op then, so a kept op later runs as a recorded
// step would; token ids and computed arrays are read when it runs.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  std::string name() const override { return inner_.name(); }
  void set_threads(int n) override { inner_.set_threads(n); }
  Weight load_weight(const TensorView& view) override { return inner_.load_weight(view); }
  std::unique_ptr<Buffer> alloc(size_t n) override { return inner_.alloc(n); }
  void upload(float* dst, const float* src, size_t n) override { inner_.upload(dst, src, n); }
  void download(float* dst, const float* src, size_t n) override { inner_.download(dst, src, n); }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    inner_.download_rows(dst, src, n);
  }
  void begin_step() override { inner_.begin_step(); }
  bool end_step() override { return inner_.end_step(); }
  void abort_step() override { inner_.abort_step(); }

  void fill(float* dst, float value, size_t n) override {
    issue([=, this] { inner_.fill(dst, value, n); });
  }
  void copy_rows(float* dst, size_t ds, const float* src, size_t ss, int64_t rows,
                 int64_t n) override {
    issue([=, this] { inner_.copy_rows(dst, ds, src, ss, rows, n); });
  }
  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    issue([=, this] { inner_.embed(table, tokens, T, out); });
  }
  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    issue([=, this] { inner_.matmul(w, x, T, y); });
  }
  void add(float* x, const float* y, size_t n) override {
    issue([=, this] { inner_.add(x, y, n); });
  }
  void rms_norm(const float* x, size_t xs, float* out, size_t os, int64_t rows, int64_t n,
                const float* weight, float eps) override {
    issue([=, this] { inner_.rms_norm(x, xs, out, os, rows, n, weight, eps); });
  }
  void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                    float eps, float* out) override {
    issue([=, this] { inner_.add_rms_norm(x, y, rows, n, weight, eps, out); });
  }
  void rope_neox(float* x, size_t ts, int64_t T, int64_t heads, size_t hs, int64_t rot,
                 const int32_t* positions, double theta) override {
    issue([=, this, p = std::vector<int32_t>(positions, positions + T)] {
      inner_.rope_neox(x, ts, T, heads, hs, rot, p.data(), theta);
    });
  }
  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override {
    issue([=, this, s = PagedCopy(seqs)] { inner_.kv_store(s.seqs, k, v); });
  }
  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t qs,
                       int64_t n_head, float scale, float* out) override {
    issue([=, this, s = PagedCopy(seqs)] {
      inner_.paged_attention(s.seqs, q, qs, n_head, scale, out);
    });
  }
  void mul_sigmoid(float* x, const float* gate, size_t gs, int64_t T, int64_t n) override {
    issue([=, this] { inner_.mul_sigmoid(x, gate, gs, T, n); });
  }
  void swiglu(const float* gate, const float* up, float* out, size_t n) override {
    issue([=, this] { inner_.swiglu(gate, up, out, n); });
  }
  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* state, float* out) override {
    issue([=, this] { inner_.conv1d_silu(x, T, channels, K, weight, state, out); });
  }
  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta, const float* a_neg,
                        const float* dt_bias, int64_t T, const DeltaRuleShape& shape, float* state,
                        float* out) override {
    issue([=, this] {
      inner_.gated_delta_rule(qkv, alpha, beta, a_neg, dt_bias, T, shape, state, out);
    });
  }
  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override {
    issue([=, this, s = std::vector<SequenceSlice>(seqs.begin(), seqs.end())] {
      inner_.conv1d_silu_seqs(s, x, channels, K, weight, out);
    });
  }
  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& shape,
                             float* out) override {
    issue([=, this, s = std::vector<SequenceSlice>(seqs.begin(), seqs.end())] {
      inner_.gated_delta_rule_seqs(s, qkv, alpha, beta, a_neg, dt_bias, shape, out);
    });
  }
  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override {
    issue([=, this] { inner_.gated_rms_norm(x, z, weight, rows, dv, eps, out); });
  }

 protected:
  virtual void issue(std::function<void()> op) { op(); }

 private:
  // The sequences of a paged op with their page tables as they are when it is issued.
  struct PagedCopy {
    explicit PagedCopy(std::span<const PagedSequence> in) : seqs(in.begin(), in.end()) {
      for (const PagedSequence& s : seqs) {
        const int64_t n = (s.n_past + s.T + kKvPageTokens - 1) / kKvPageTokens;
        tables.emplace_back(s.pages, s.pages + n);
      }
      for (size_t i = 0; i < seqs.size(); ++i) seqs[i].pages = tables[i].data();
    }
    PagedCopy(const PagedCopy& o) : PagedCopy(std::span<const PagedSequence>(o.seqs)) {}
    std::vector<PagedSequence> seqs;
    std::vector<std::vector<int32_t>> tables;
  };

  Backend& inner_;
};

// Offers what a GPU backend does for mixture-of-experts blocks (routing on the backend:
// MoeMlp's path for small decode steps) with the CPU backend's implementations of those ops,
// and counts them and the recorded steps.
class RoutingCpu final : public testing::ForwardingBackend {
 public:
  explicit RoutingCpu(Backend& cpu) : ForwardingBackend(cpu), cpu_(cpu) {}
  int routes = 0;          // moe_route calls of decode steps (up to MoeMlp::kDeviceTokens)
  int prompt_routes = 0;   // and of longer inputs
  int recorded_steps = 0;  // begin_step calls: steps the model asked to record

  void begin_step() override {
    ++recorded_steps;
    ForwardingBackend::begin_step();
  }
  bool offers_device_routing(int64_t n_experts) const override { return n_experts <= 512; }
  void moe_route(const float* logits, int64_t T, int64_t E, int64_t k, int32_t* ids,
                 float* weights) override {
    ++(T <= modules::MoeMlp::kDeviceTokens ? routes : prompt_routes);
    cpu_.moe_route(logits, T, E, k, ids, weights);
  }
  Weight combined_weight(std::span<const Weight> experts, int64_t n, bool side) override {
    return cpu_.combined_weight(experts, n, side);
  }
  void combine_experts(std::span<const Weight> experts, const int32_t* ids, int64_t n, bool side,
                       const Weight& combined) override {
    cpu_.combine_experts(experts, ids, n, side, combined);
  }
  void scale_segments(float* x, const float* weights, int64_t n, int64_t width) override {
    cpu_.scale_segments(x, weights, n, width);
  }
  void add_sigmoid_gated(float* out, const float* y, const float* gate, int64_t T,
                         int64_t n) override {
    cpu_.add_sigmoid_gated(out, y, gate, T, n);
  }

 private:
  Backend& cpu_;
};

inline std::filesystem::path tiny_untied_model() {
  return source_dir() / "tests" / "data" / "models" / "tiny-untied-bf16";
}

// Logits of two sequences prefilled with different prompts (5 and 8 tokens) and then decoded
// together, one token each per step, for `steps` steps; sequence 1 sits out the steps where
// `sits_out` says so. Checks each sequence's length after every step.
inline std::vector<float> decode_two(Model& model, int steps,
                                     const std::function<bool(int)>& sits_out) {
  const int64_t V = model.info().n_vocab;
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::vector<float>> logits(2, std::vector<float>(static_cast<size_t>(V)));
  for (int i = 0; i < 2; ++i) {
    seqs.push_back(model.new_sequence(128));
    std::vector<int32_t> prompt(static_cast<size_t>(5 + 3 * i));
    for (size_t t = 0; t < prompt.size(); ++t) prompt[t] = static_cast<int32_t>(7 * t + i + 1);
    model.eval(*seqs.back(), prompt, false, logits[i]);
  }
  std::vector<float> all;
  int32_t tokens[2];
  int64_t decoded[2] = {0, 0};
  for (int step = 0; step < steps; ++step) {
    std::vector<Model::BatchItem> items;
    for (int i = 0; i < 2; ++i) {
      if (i == 1 && sits_out(step)) continue;
      tokens[i] = static_cast<int32_t>((step * 13 + i * 5) % V);
      Model::BatchItem item;
      item.seq = seqs[i].get();
      item.tokens = std::span<const int32_t>(&tokens[i], 1);
      item.logits = logits[i];
      items.push_back(item);
      ++decoded[i];
    }
    model.eval_batch(items);
    for (const Model::BatchItem& item : items)
      all.insert(all.end(), item.logits.begin(), item.logits.end());
    for (int i = 0; i < 2; ++i) EXPECT_EQ(seqs[i]->n_past(), 5 + 3 * i + decoded[i]);
  }
  return all;
}

}  // namespace hostlm::testing
