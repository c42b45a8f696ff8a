// Decode steps replayed from recorded CUDA graphs (CudaBackend::begin_step) must give the
// logits of the same steps launched op by op, while sequences join and leave the batch,
// cross page boundaries and grow their attention grids; and most steps must be replays, also
// when the batch goes back and forth between shapes (several recordings are kept), and most
// of those launched from a pass made during the step before (Backend::begin_step_ahead).
// Skipped where no GPU can be used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/reference_data.h"

namespace hostlm {
namespace {

constexpr int kSequences = 3;
constexpr int kSteps = 150;
constexpr int64_t kCapacity = 512;

ModelLoadOptions on_cuda() {
  ModelLoadOptions o;
  o.backend = "cuda";
  return o;
}

// Sequence 1 sits out the steps where this says so.
using SitsOut = bool (*)(int step);

// Every step's logits, sequence after sequence, for a fixed schedule of tokens; by default
// sequence 1 sits out steps 40-59, so the batch changes shape twice.
std::vector<float> run_schedule(
    Model& model, int64_t vocab,
    SitsOut sits_out = [](int step) { return step >= 40 && step < 60; }) {
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<float> prompt_logits(static_cast<size_t>(vocab));
  for (int i = 0; i < kSequences; ++i) {
    seqs.push_back(model.new_sequence(kCapacity));
    std::vector<int32_t> prompt(static_cast<size_t>(5 + 7 * i));
    for (size_t t = 0; t < prompt.size(); ++t)
      prompt[t] = static_cast<int32_t>((t * 13 + static_cast<size_t>(i) * 7) % vocab);
    model.eval(*seqs.back(), prompt, false, prompt_logits);
  }
  std::vector<float> all;
  std::vector<std::vector<float>> logits(kSequences, std::vector<float>(vocab));
  std::vector<int32_t> tokens(kSequences);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Model::BatchItem> items;
    for (int i = 0; i < kSequences; ++i) {
      if (i == 1 && sits_out(step)) continue;
      tokens[i] = static_cast<int32_t>((step * 31 + i * 17) % vocab);
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
  return all;
}

struct GraphCounts {
  int recorded = -1, replayed = -1, missed = -1;
  int ahead = 0;  // replays launched from a pass made ahead
};

// The schedule with graphs (HOSTLM_CUDA_GRAPHS_KEPT=kept when set), its logits checked
// against `want` (op by op), and the graph counts the backend printed.
GraphCounts run_with_graphs(PluginRegistry& registry, const testing::ReferenceModel& ref,
                            const std::vector<float>& want, SitsOut sits_out, const char* kept) {
  if (kept != nullptr) setenv("HOSTLM_CUDA_GRAPHS_KEPT", kept, 1);
  setenv("HOSTLM_CUDA_GRAPH_STATS", "1", 1);
  auto graphs = std::make_unique<LoadedModel>(registry, ref.folder, on_cuda());
  unsetenv("HOSTLM_CUDA_GRAPHS_KEPT");
  const std::vector<float> got = run_schedule(graphs->model(), ref.vocab, sits_out);
  ::testing::internal::CaptureStderr();
  graphs.reset();  // prints the graph counts
  const std::string stats = ::testing::internal::GetCapturedStderr();
  unsetenv("HOSTLM_CUDA_GRAPH_STATS");
  EXPECT_EQ(want.size(), got.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(want[i] - got[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  EXPECT_LE(worst, 1e-6 * scale) << "max |graph - live| = " << worst;
  std::smatch m;
  GraphCounts c;
  EXPECT_TRUE(
      std::regex_search(stats, m, std::regex(R"((\d+) recorded, (\d+) replayed, (\d+) missed)")))
      << stats;
  if (m.size() == 4) c = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
  if (std::regex_search(stats, m, std::regex(R"((\d+) of the steps they matched were launched)")))
    c.ahead = std::stoi(m[1]);
  EXPECT_EQ(c.recorded + c.replayed, kSteps - 1) << stats;  // the first step runs live
  EXPECT_LE(c.missed, c.recorded) << stats;
  return c;
}

// Sequence 1 leaves and rejoins every five steps from step 20 to 99: two batch shapes in
// turn, sixteen changes. Kept recordings replay each shape's graph when it comes back; with
// one kept (HOSTLM_CUDA_GRAPHS_KEPT=1) each change records again.
TEST(CudaGraphReplay, AlternatingBatchesReplayKeptRecordings) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const testing::ReferenceModel ref = testing::load_reference("tiny-untied-bf16");
  PluginRegistry registry;
  const SitsOut in_turn = [](int step) { return step >= 20 && step < 100 && (step / 5) % 2 == 1; };
  setenv("HOSTLM_CUDA_GRAPHS", "0", 1);
  std::vector<float> want;
  {
    LoadedModel live(registry, ref.folder, on_cuda());
    want = run_schedule(live.model(), ref.vocab, in_turn);
  }
  unsetenv("HOSTLM_CUDA_GRAPHS");
  const GraphCounts kept = run_with_graphs(registry, ref, want, in_turn, nullptr);
  const GraphCounts one = run_with_graphs(registry, ref, want, in_turn, "1");
  // Two shapes, each recorded once per power of two of pages (at most four here).
  EXPECT_LE(kept.recorded, 10);
  EXPECT_GE(one.recorded, 16);
  EXPECT_LT(kept.recorded, one.recorded);
}

TEST(CudaGraphReplay, ReplayedDecodeStepsMatchLiveLaunches) {
  std::string why;
  if (!testing::cuda_backend_or_reason(why)) GTEST_SKIP() << "no usable CUDA backend: " << why;
  const testing::ReferenceModel ref = testing::load_reference("tiny-untied-bf16");
  PluginRegistry registry;

  setenv("HOSTLM_CUDA_GRAPHS", "0", 1);
  std::vector<float> want;
  {
    LoadedModel live(registry, ref.folder, on_cuda());
    want = run_schedule(live.model(), ref.vocab);
  }
  unsetenv("HOSTLM_CUDA_GRAPHS");
  const GraphCounts c = run_with_graphs(
      registry, ref, want, [](int step) { return step >= 40 && step < 60; }, nullptr);
  // A recording per batch shape and per power of two of pages; everything else replays.
  EXPECT_GE(c.replayed, kSteps - 20);
  EXPECT_LE(c.recorded, 20);
  // Passes made ahead launch all but the steps after a change of batch, a recording, or one
  // where a sequence starts a page (three sequences: about one step in eleven).
  EXPECT_GE(c.ahead, kSteps / 2);
  EXPECT_LE(c.ahead, c.replayed);

  // Without them (HOSTLM_CUDA_AHEAD=0) every replay makes its own pass, to the same logits.
  setenv("HOSTLM_CUDA_AHEAD", "0", 1);
  const GraphCounts off = run_with_graphs(
      registry, ref, want, [](int step) { return step >= 40 && step < 60; }, nullptr);
  unsetenv("HOSTLM_CUDA_AHEAD");
  EXPECT_EQ(off.ahead, 0);
  EXPECT_GE(off.replayed, kSteps - 20);
}

}  // namespace
}  // namespace hostlm
