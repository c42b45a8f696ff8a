// The model's side of Backend::end_step: a backend replaying a recorded step may find at
// end_step that the step differs, run nothing and return false (the CUDA backend does). The
// model must then issue the same step again, and nothing it keeps on the host (the
// sequences' lengths, their pages) may have moved on in between. Checked on the CPU with a
// backend that drops the first issue of every step: the logits must equal a plain run's,
// bit for bit, and every step must have been issued twice.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/model_loader.h"
#include "hostlm/ops.h"
#include "hostlm/registry.h"
#include "plugins/qwen35/reference_data.h"

namespace hostlm {
namespace {

// Forwards every op to `inner`, except between the first begin_step of a step and its
// end_step, where ops are dropped and end_step returns false, as a replay that missed.
class MissingReplayBackend final : public Backend {
 public:
  explicit MissingReplayBackend(Backend& inner) : inner_(inner) {}
  int misses = 0, steps = 0;

  std::string name() const override { return inner_.name(); }
  void set_threads(int n) override { inner_.set_threads(n); }
  Weight load_weight(const TensorView& view) override { return inner_.load_weight(view); }
  std::unique_ptr<Buffer> alloc(size_t n) override { return inner_.alloc(n); }
  void upload(float* dst, const float* src, size_t n) override { inner_.upload(dst, src, n); }
  void download(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(dropping_) << "a download inside a step";
    inner_.download(dst, src, n);
  }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    EXPECT_FALSE(dropping_) << "a download inside a step";
    inner_.download_rows(dst, src, n);
  }
  void fill(float* dst, float value, size_t n) override {
    if (!dropping_) inner_.fill(dst, value, n);
  }
  void begin_step() override {
    dropping_ = !retried_;  // the first issue of a step misses, the second runs
    if (dropping_) ++steps;
    inner_.begin_step();
  }
  bool end_step() override {
    const bool ran = inner_.end_step() && !dropping_;
    if (dropping_) ++misses;
    retried_ = dropping_;
    dropping_ = false;
    return ran;
  }
  void abort_step() override {
    dropping_ = retried_ = false;
    inner_.abort_step();
  }
  void copy_rows(float* dst, size_t ds, const float* src, size_t ss, int64_t rows,
                 int64_t n) override {
    if (!dropping_) inner_.copy_rows(dst, ds, src, ss, rows, n);
  }
  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    if (!dropping_) inner_.embed(table, tokens, T, out);
  }
  void matmul(const Weight& w, const float* x, int64_t T, float* y) override {
    if (!dropping_) inner_.matmul(w, x, T, y);
  }
  void add(float* x, const float* y, size_t n) override {
    if (!dropping_) inner_.add(x, y, n);
  }
  void rms_norm(const float* x, size_t xs, float* out, size_t os, int64_t rows, int64_t n,
                const float* weight, float eps) override {
    if (!dropping_) inner_.rms_norm(x, xs, out, os, rows, n, weight, eps);
  }
  void add_rms_norm(float* x, const float* y, int64_t rows, int64_t n, const float* weight,
                    float eps, float* out) override {
    if (!dropping_) inner_.add_rms_norm(x, y, rows, n, weight, eps, out);
  }
  void rope_neox(float* x, size_t ts, int64_t T, int64_t heads, size_t hs, int64_t rot,
                 const int32_t* positions, double theta) override {
    if (!dropping_) inner_.rope_neox(x, ts, T, heads, hs, rot, positions, theta);
  }
  void kv_store(std::span<const PagedSequence> seqs, const float* k, const float* v) override {
    if (!dropping_) inner_.kv_store(seqs, k, v);
  }
  void paged_attention(std::span<const PagedSequence> seqs, const float* q, size_t qs,
                       int64_t n_head, float scale, float* out) override {
    if (!dropping_) inner_.paged_attention(seqs, q, qs, n_head, scale, out);
  }
  void mul_sigmoid(float* x, const float* gate, size_t gs, int64_t T, int64_t n) override {
    if (!dropping_) inner_.mul_sigmoid(x, gate, gs, T, n);
  }
  void swiglu(const float* gate, const float* up, float* out, size_t n) override {
    if (!dropping_) inner_.swiglu(gate, up, out, n);
  }
  void conv1d_silu(const float* x, int64_t T, int64_t channels, int64_t K, const float* weight,
                   float* state, float* out) override {
    if (!dropping_) inner_.conv1d_silu(x, T, channels, K, weight, state, out);
  }
  void gated_delta_rule(const float* qkv, const float* alpha, const float* beta, const float* a_neg,
                        const float* dt_bias, int64_t T, const DeltaRuleShape& shape, float* state,
                        float* out) override {
    if (!dropping_) inner_.gated_delta_rule(qkv, alpha, beta, a_neg, dt_bias, T, shape, state, out);
  }
  void conv1d_silu_seqs(std::span<const SequenceSlice> seqs, const float* x, int64_t channels,
                        int64_t K, const float* weight, float* out) override {
    if (!dropping_) inner_.conv1d_silu_seqs(seqs, x, channels, K, weight, out);
  }
  void gated_delta_rule_seqs(std::span<const SequenceSlice> seqs, const float* qkv,
                             const float* alpha, const float* beta, const float* a_neg,
                             const float* dt_bias, const DeltaRuleShape& shape,
                             float* out) override {
    if (!dropping_)
      inner_.gated_delta_rule_seqs(seqs, qkv, alpha, beta, a_neg, dt_bias, shape, out);
  }
  void gated_rms_norm(const float* x, const float* z, const float* weight, int64_t rows, int64_t dv,
                      float eps, float* out) override {
    if (!dropping_) inner_.gated_rms_norm(x, z, weight, rows, dv, eps, out);
  }

 private:
  Backend& inner_;
  bool dropping_ = false;  // inside a step's first issue
  bool retried_ = false;   // the last end_step missed: the next begin_step is its retry
};

std::filesystem::path tiny_model() {
  return testing::source_dir() / "tests" / "data" / "models" / "tiny-untied-bf16";
}

// Logits of two sequences prefilled with different prompts and then decoded together, one
// token each per step, for 40 steps (past a KV page boundary).
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
  for (int step = 0; step < 40; ++step) {
    std::vector<Model::BatchItem> items(2);
    for (int i = 0; i < 2; ++i) {
      tokens[i] = static_cast<int32_t>((step * 13 + i * 5) % V);
      items[i].seq = seqs[i].get();
      items[i].tokens = std::span<const int32_t>(&tokens[i], 1);
      items[i].logits = logits[i];
    }
    model.eval_batch(items);
    for (int i = 0; i < 2; ++i) {
      all.insert(all.end(), logits[i].begin(), logits[i].end());
      EXPECT_EQ(seqs[i]->n_past(), 5 + 3 * i + step + 1);
    }
  }
  return all;
}

TEST(Qwen35StepReplay, ReissuedStepsGiveThePlainRunsLogits) {
  PluginRegistry registry;
  ModelLoadOptions options;
  options.backend = "cpu";
  LoadedModel plain(registry, tiny_model(), options);
  const std::vector<float> want = decode_two(plain.model());

  const OpenedModelFiles files(tiny_model());
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  cpu->set_threads(options.threads);  // as LoadedModel does
  MissingReplayBackend missing(*cpu);
  {
    std::unique_ptr<Model> model =
        registry.plugin_for(files.files().architecture).load(files.files(), missing, {});
    const std::vector<float> got = decode_two(*model);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(missing.steps, 40);
  EXPECT_EQ(missing.misses, 40);
}

}  // namespace
}  // namespace hostlm
