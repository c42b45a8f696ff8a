// The model's side of Backend::begin_step_ahead / launch_ahead: after each decode step the
// model makes the next step's pass ahead, for the same sequences one token further, and
// launches it when that step comes as predicted (the CUDA backend replays a recorded graph
// then). Checked on the CPU with a backend that keeps the ops of a pass made ahead and runs
// them at launch_ahead, reading the host arrays they point to only then, as a graph's copies
// do: the logits must equal those of the same backend offering nothing ahead, bit for bit,
// while sequences cross a KV page boundary and one of them sits some steps out; most steps
// must launch from their pass made ahead, and launch_ahead must get the embed's token ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/model_loader.h"
#include "hostlm/ops.h"
#include "hostlm/registry.h"
#include "plugins/qwen35/reference_data.h"

namespace hostlm {
namespace {

// The sequences of a paged op with their page tables, as a pass made ahead uploads them:
// read when the op is issued, not when it runs.
struct PagedCopy {
  explicit PagedCopy(std::span<const PagedSequence> in) : seqs(in.begin(), in.end()) {
    for (PagedSequence& s : seqs) {
      const int64_t n = (s.n_past + s.T + kKvPageTokens - 1) / kKvPageTokens;
      tables.emplace_back(s.pages, s.pages + n);
    }
    for (size_t i = 0; i < seqs.size(); ++i) seqs[i].pages = tables[i].data();
  }
  PagedCopy(const PagedCopy& o) : PagedCopy(std::span<const PagedSequence>(o.seqs)) {}
  std::vector<PagedSequence> seqs;
  std::vector<std::vector<int32_t>> tables;
};

// Forwards every op to `inner`; inside a pass made ahead the ops are kept instead and run by
// launch_ahead. What the CUDA backend uploads during the pass (positions, page tables, the
// sequences' lengths) is copied when the op is issued; the token ids are read at launch, as
// launch_ahead patches them. Any op run in between drops the kept pass, as the CUDA backend
// does.
class AheadBackend final : public Backend {
 public:
  AheadBackend(Backend& inner, bool offer) : inner_(inner), offer_(offer) {}
  int passes = 0, launched = 0;

  std::string name() const override { return inner_.name(); }
  void set_threads(int n) override { inner_.set_threads(n); }
  Weight load_weight(const TensorView& view) override { return inner_.load_weight(view); }
  std::unique_ptr<Buffer> alloc(size_t n) override { return inner_.alloc(n); }
  void upload(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "an upload inside a pass made ahead";
    inner_.upload(dst, src, n);
  }
  void download(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "a download inside a pass made ahead";
    inner_.download(dst, src, n);
  }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "a download inside a pass made ahead";
    inner_.download_rows(dst, src, n);
  }

  void begin_step() override { held_ = false; }
  bool end_step() override {
    if (!ahead_) return true;
    ahead_ = false;
    held_ = true;  // every pass "matches": this backend keeps no recordings to compare with
    return true;
  }
  void abort_step() override { ahead_ = held_ = false; }
  bool offers_steps_ahead() const override { return offer_; }
  bool begin_step_ahead() override {
    held_ = false;
    if (!offer_) return false;
    kept_.clear();
    embedded_ = nullptr;
    ahead_ = true;
    ++passes;
    return true;
  }
  bool launch_ahead(std::span<const int32_t> tokens) override {
    if (!held_) return false;
    held_ = false;
    // The ids the caller gives are those the kept embed will read.
    EXPECT_NE(embedded_, nullptr);
    if (embedded_ != nullptr) {
      EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), embedded_, embedded_ + embedded_n_));
    }
    EXPECT_EQ(static_cast<int64_t>(tokens.size()), embedded_n_);
    for (const auto& op : kept_) op();
    ++launched;
    return true;
  }

  void fill(float* dst, float value, size_t n) override {
    run([=, this] { inner_.fill(dst, value, n); });
  }
  void copy_rows(float* dst, size_t ds, const float* src, size_t ss, int64_t rows,
                 int64_t n) override {
    run([=, this] { inner_.copy_rows(dst, ds, src, ss, rows, n); });
  }
  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    if (ahead_) embedded_ = tokens, embedded_n_ = T;
    run([=, this] { inner_.embed(table, tokens, T, out); });
  }
  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    run([=, this] { inner_.matmul(w, x, T, y); });
  }
  void add(float* x, const float* y, size_t n) override {
    run([=, this] { inner_.add(x, y, n); });
  }
  void rms_norm(const float* x, size_t xs, float* out, size_t os, int64_t rows, int64_t n,
                const float* weight, float eps) override {
    run([=, this] { inner_.rms_norm(x, xs, out, os, rows, n, weight, eps); });
  }
  void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                    float eps, float* out) override {
    run([=, this] { inner_.add_rms_norm(x, y, rows, n, weight, eps, out); });
  }
  void rope_neox(float* x, size_t ts, int64_t T, int64_t heads, size_t hs, int64_t rot,
                 const int32_t* positions, double theta) override {
    run([=, this, p = std::vector<int32_t>(positions, positions + T)] {
      inner_.rope_neox(x, ts, T, heads, hs, rot, p.data(), theta);
    });
  }
  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override {
    run([=, this, s = PagedCopy(seqs)] { inner_.kv_store(s.seqs, k, v); });
  }
  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t qs,
                       int64_t n_head, float scale, float* out) override {
    run([=, this, s = PagedCopy(seqs)] {
      inner_.paged_attention(s.seqs, q, qs, n_head, scale, out);
    });
  }
  void mul_sigmoid(float* x, const float* gate, size_t gs, int64_t T, int64_t n) override {
    run([=, this] { inner_.mul_sigmoid(x, gate, gs, T, n); });
  }
  void swiglu(const float* gate, const float* up, float* out, size_t n) override {
    run([=, this] { inner_.swiglu(gate, up, out, n); });
  }
  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* state, float* out) override {
    run([=, this] { inner_.conv1d_silu(x, T, channels, K, weight, state, out); });
  }
  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta, const float* a_neg,
                        const float* dt_bias, int64_t T, const DeltaRuleShape& shape, float* state,
                        float* out) override {
    run([=, this] {
      inner_.gated_delta_rule(qkv, alpha, beta, a_neg, dt_bias, T, shape, state, out);
    });
  }
  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override {
    run([=, this, s = copy(seqs)] { inner_.conv1d_silu_seqs(s, x, channels, K, weight, out); });
  }
  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& shape,
                             float* out) override {
    run([=, this, s = copy(seqs)] {
      inner_.gated_delta_rule_seqs(s, qkv, alpha, beta, a_neg, dt_bias, shape, out);
    });
  }
  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override {
    run([=, this] { inner_.gated_rms_norm(x, z, weight, rows, dv, eps, out); });
  }

 private:
  template <typename T>
  static std::vector<T> copy(std::span<const T> s) {
    return {s.begin(), s.end()};
  }
  void run(std::function<void()> op) {
    if (ahead_) {
      kept_.push_back(std::move(op));
      return;
    }
    held_ = false;  // an op run now may change what the kept pass would find
    op();
  }

  Backend& inner_;
  const bool offer_;
  bool ahead_ = false;  // inside a pass made ahead
  bool held_ = false;   // a pass made ahead waits for launch_ahead
  std::vector<std::function<void()>> kept_;
  const int32_t* embedded_ = nullptr;  // the kept embed's token ids
  int64_t embedded_n_ = 0;
};

std::filesystem::path tiny_model() {
  return testing::source_dir() / "tests" / "data" / "models" / "tiny-untied-bf16";
}

constexpr int kSteps = 60;

// Logits of two sequences decoded together after different prompts, one token each per step,
// past a KV page boundary; sequence 1 sits out steps 20-24.
std::vector<float> decode_two(Model& model) {
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
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Model::BatchItem> items;
    for (int i = 0; i < 2; ++i) {
      if (i == 1 && step >= 20 && step < 25) continue;
      tokens[i] = static_cast<int32_t>((step * 13 + i * 5) % V);
      Model::BatchItem item;
      item.seq = seqs[i].get();
      item.tokens = std::span<const int32_t>(&tokens[i], 1);
      item.logits = logits[i];
      items.push_back(item);
    }
    model.eval_batch(items);
    for (const Model::BatchItem& item : items)
      all.insert(all.end(), item.logits.begin(), item.logits.end());
  }
  EXPECT_EQ(seqs[0]->n_past(), 5 + kSteps);
  EXPECT_EQ(seqs[1]->n_past(), 8 + kSteps - 5);
  return all;
}

TEST(Qwen35StepAhead, StepsLaunchedFromTheirPassMadeAheadGiveTheSameLogits) {
  PluginRegistry registry;
  const OpenedModelFiles files(tiny_model());
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  cpu->set_threads(1);
  auto decode_with = [&](AheadBackend& backend) {
    std::unique_ptr<Model> model =
        registry.plugin_for(files.files().architecture).load(files.files(), backend, {});
    return decode_two(*model);
  };
  AheadBackend plain(*cpu, false);
  const std::vector<float> want = decode_with(plain);
  AheadBackend ahead(*cpu, true);
  const std::vector<float> got = decode_with(ahead);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(plain.passes, 0);
  // Every step makes a pass for the next; all launch but the first and those after the batch
  // changed (steps 20 and 25) or whose predicted step did not come (the last).
  EXPECT_EQ(ahead.passes, kSteps);
  EXPECT_EQ(ahead.launched, kSteps - 3);
}

}  // namespace
}  // namespace hostlm
