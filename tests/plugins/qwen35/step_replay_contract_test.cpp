// The model's side of Backend::end_step: a backend replaying a recorded step may find at
// end_step that the step differs, run nothing and return false (the CUDA backend does). The
// model must then issue the same step again, and nothing it keeps on the host (the
// sequences' lengths, their pages) may have moved on in between. Checked on the CPU with a
// backend that drops the first issue of every step: the logits must equal a plain run's,
// bit for bit, and every step must have been issued twice.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hostlm/model_loader.h"
#include "hostlm/registry.h"
#include "step_contract_support.h"

namespace hostlm {
namespace {

// Forwards every op, except between the first begin_step of a step and its end_step, where
// ops are dropped and end_step returns false, as a replay that missed.
class MissingReplayBackend final : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  int misses = 0, steps = 0;

  void download(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(dropping_) << "a download inside a step";
    ForwardingBackend::download(dst, src, n);
  }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    EXPECT_FALSE(dropping_) << "a download inside a step";
    ForwardingBackend::download_rows(dst, src, n);
  }
  void begin_step() override {
    dropping_ = !retried_;  // the first issue of a step misses, the second runs
    if (dropping_) ++steps;
    ForwardingBackend::begin_step();
  }
  bool end_step() override {
    const bool ran = ForwardingBackend::end_step() && !dropping_;
    if (dropping_) ++misses;
    retried_ = dropping_;
    dropping_ = false;
    return ran;
  }
  void abort_step() override {
    dropping_ = retried_ = false;
    ForwardingBackend::abort_step();
  }

 protected:
  void issue(std::function<void()> op) override {
    if (!dropping_) op();
  }

 private:
  bool dropping_ = false;  // inside a step's first issue
  bool retried_ = false;   // the last end_step missed: the next begin_step is its retry
};

constexpr int kSteps = 40;  // past a KV page boundary
const auto kNobodySitsOut = [](int) { return false; };

TEST(Qwen35StepReplay, ReissuedStepsGiveThePlainRunsLogits) {
  PluginRegistry registry;
  ModelLoadOptions options;
  options.backend = "cpu";
  LoadedModel plain(registry, testing::tiny_untied_model(), options);
  const std::vector<float> want = testing::decode_two(plain.model(), kSteps, kNobodySitsOut);

  const OpenedModelFiles files(testing::tiny_untied_model());
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  cpu->set_threads(options.threads);  // as LoadedModel does
  MissingReplayBackend missing(*cpu);
  {
    std::unique_ptr<Model> model =
        registry.plugin_for(files.files().architecture).load(files.files(), missing, {});
    const std::vector<float> got = testing::decode_two(*model, kSteps, kNobodySitsOut);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(missing.steps, kSteps);
  EXPECT_EQ(missing.misses, kSteps);
}

}  // namespace
}  // namespace hostlm
