// The model's side of Backend::begin_step_ahead / launch_ahead: after each decode step the
// model makes the next step's pass ahead, for the same sequences one token further, and
// launches it when that step comes as predicted (the CUDA backend replays a recorded graph
// then). Checked on the CPU with a backend that keeps the ops of a pass made ahead and runs
// them at launch_ahead, with what a GPU step uploads read when the pass was made and the token
// ids read at launch (testing::ForwardingBackend): the logits must equal those of the same
// backend offering nothing ahead, bit for bit, while sequences cross a KV page boundary and
// one of them sits some steps out; most steps must launch from their pass made ahead, and
// launch_ahead must get the embed's token ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/model_loader.h"
#include "hostlm/registry.h"
#include "step_contract_support.h"

namespace hostlm {
namespace {

// Keeps the ops of a pass made ahead and runs them at launch_ahead. Any op run in between
// drops the kept pass, as the CUDA backend does.
class AheadBackend final : public testing::ForwardingBackend {
 public:
  AheadBackend(Backend& inner, bool offer) : ForwardingBackend(inner), offer_(offer) {}
  int passes = 0, launched = 0;

  void upload(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "an upload inside a pass made ahead";
    ForwardingBackend::upload(dst, src, n);
  }
  void download(float* dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "a download inside a pass made ahead";
    ForwardingBackend::download(dst, src, n);
  }
  void download_rows(std::span<float* const> dst, const float* src, size_t n) override {
    EXPECT_FALSE(ahead_) << "a download inside a pass made ahead";
    ForwardingBackend::download_rows(dst, src, n);
  }
  void embed(const Weight& table, const int32_t* tokens, int64_t T, float* out) override {
    if (ahead_) embedded_ = tokens, embedded_n_ = T;
    ForwardingBackend::embed(table, tokens, T, out);
  }

  void begin_step() override {
    held_ = false;
    ForwardingBackend::begin_step();
  }
  bool end_step() override {
    if (!ahead_) return ForwardingBackend::end_step();
    ahead_ = false;
    held_ = true;  // every pass "matches": this backend keeps no recordings to compare with
    return true;
  }
  void abort_step() override {
    ahead_ = held_ = false;
    ForwardingBackend::abort_step();
  }
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

 protected:
  void issue(std::function<void()> op) override {
    if (ahead_) {
      kept_.push_back(std::move(op));
      return;
    }
    held_ = false;  // an op run now may change what the kept pass would find
    op();
  }

 private:
  const bool offer_;
  bool ahead_ = false;  // inside a pass made ahead
  bool held_ = false;   // a pass made ahead waits for launch_ahead
  std::vector<std::function<void()>> kept_;
  const int32_t* embedded_ = nullptr;  // the kept embed's token ids
  int64_t embedded_n_ = 0;
};

constexpr int kSteps = 60;  // past a KV page boundary
const auto kSitsOut = [](int step) { return step >= 20 && step < 25; };

TEST(Qwen35StepAhead, StepsLaunchedFromTheirPassMadeAheadGiveTheSameLogits) {
  PluginRegistry registry;
  const OpenedModelFiles files(testing::tiny_untied_model());
  std::unique_ptr<Backend> cpu = create_backend("cpu");
  cpu->set_threads(1);
  auto decode_with = [&](AheadBackend& backend) {
    std::unique_ptr<Model> model =
        registry.plugin_for(files.files().architecture).load(files.files(), backend, {});
    return testing::decode_two(*model, kSteps, kSitsOut);
  };
  AheadBackend plain(*cpu, false);
  const std::vector<float> want = decode_with(plain);
  AheadBackend ahead(*cpu, true);
  const std::vector<float> got = decode_with(ahead);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(plain.passes, 0);
  // Every step makes a pass for the next; all launch but the first and those after the batch
  // changed (steps 20 and 25); the last step's pass is never launched.
  EXPECT_EQ(ahead.passes, kSteps);
  EXPECT_EQ(ahead.launched, kSteps - 3);
}

}  // namespace
}  // namespace hostlm
