// ModelManager's settings that change while serving (a server's SIGHUP): the queue bound
// reaches engines already loaded, the default keep-alive applies to later requests, and new
// sources replace the old ones without unloading anything.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "hostlm/engine.h"
#include "hostlm/engine_stats.h"
#include "hostlm/error.h"
#include "hostlm/registry.h"
#include "hostlm/serving.h"
#include "serving_test_support.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;
using testing::registry;
using testing::small_options;
using testing::tiny_model;

// "done" when a two-token generation ran to its end, "busy" when the engine refused it.
std::string generate_two(const ModelLease& lease) {
  TextRequest request;
  request.prompt = "hi";
  request.options.num_predict = 2;
  request.options.temperature = 0.0f;
  try {
    std::unique_ptr<TextStream> stream = lease.generate(std::move(request));
    std::vector<TextDelta> deltas;
    while (!stream->read(deltas, std::chrono::milliseconds(1000))) {
    }
    const std::string reason = stream->summary().done_reason;
    return reason == "length" || reason == "stop" ? "done" : reason;
  } catch (const EngineBusy&) {
    return "busy";
  }
}

// Names a model by another name, as a store does.
class AliasSource final : public ModelSource {
 public:
  AliasSource(std::string name, fs::path path) : name_(std::move(name)), path_(std::move(path)) {}
  std::optional<ModelSpec> find(std::string_view name) const override {
    if (name != name_) return std::nullopt;
    ModelSpec spec;
    spec.name = name_;
    spec.path = path_;
    return spec;
  }
  std::vector<ModelSpec> list() const override { return {*find(name_)}; }

 private:
  std::string name_;
  fs::path path_;
};

TEST(ModelManagerLiveOptions, QueueBoundReachesLoadedEngines) {
  ModelManager models(registry(), small_options(), {std::make_shared<PathModelSource>()});
  const ModelLease lease = models.acquire(tiny_model().string());
  EXPECT_EQ(generate_two(lease), "done");

  // A bound of 0 takes no request at all: the model loaded before the change has it.
  models.set_live_options({.keep_alive = std::chrono::minutes(5), .max_queue = 0, .max_loaded = 3});
  EXPECT_EQ(models.options().max_queue, 0u);
  EXPECT_EQ(generate_two(lease), "busy");
  models.set_live_options({.keep_alive = std::chrono::minutes(5), .max_queue = 8, .max_loaded = 3});
  EXPECT_EQ(generate_two(lease), "done");
}

// The manager's metrics (a server's /metrics) add up its models' engine counters: tokens,
// steps and the steps' time inside and outside the forward pass.
TEST(ModelManagerMetrics, CarryTheLoadedModelsCounters) {
  ModelManager models(registry(), small_options(), {std::make_shared<PathModelSource>()});
  EXPECT_EQ(models.metrics().steps_total, 0u);
  const ModelLease lease = models.acquire(tiny_model().string());
  ASSERT_EQ(generate_two(lease), "done");
  const EngineMetrics m = models.metrics();
  EXPECT_EQ(m.requests_total, 1u);
  EXPECT_EQ(m.generated_tokens_total, 2u);
  // The stream ends inside the last step, before that step is counted: at least the first.
  EXPECT_GE(m.steps_total, 1u);
  EXPECT_GT(m.step_model_seconds_total, 0);
  EXPECT_GT(m.step_host_seconds_total, 0);
  EXPECT_EQ(m.best_logits_draws_total, 0u);  // a CPU engine draws from whole rows
}

TEST(ModelManagerLiveOptions, KeepAliveAppliesToLaterRequests) {
  ModelManager models(registry(), small_options(), {std::make_shared<PathModelSource>()});
  const std::string name = tiny_model().string();
  { models.acquire(name); }
  ASSERT_EQ(models.loaded().size(), 1u);
  EXPECT_TRUE(models.loaded()[0].expires_at.has_value()) << "5 minutes by default";

  models.set_live_options(
      {.keep_alive = std::chrono::nanoseconds(-1), .max_queue = 8, .max_loaded = 3});
  { models.acquire(name); }
  ASSERT_EQ(models.loaded().size(), 1u);
  EXPECT_FALSE(models.loaded()[0].expires_at.has_value()) << "now for ever";
}

TEST(ModelManagerLiveOptions, NewSourcesKeepLoadedModels) {
  ModelManager models(registry(), small_options(), {std::make_shared<PathModelSource>()});
  EXPECT_FALSE(models.resolve("tiny").has_value());
  EXPECT_TRUE(models.list().empty());

  models.set_sources({std::make_shared<AliasSource>("tiny", tiny_model())});
  ASSERT_TRUE(models.resolve("tiny").has_value());
  ASSERT_EQ(models.list().size(), 1u);
  const ModelLease lease = models.acquire("tiny");
  EXPECT_GT(lease.load_duration().count(), 0);

  // The name goes away: the loaded model stays, and its lease keeps working.
  models.set_sources({std::make_shared<PathModelSource>()});
  EXPECT_FALSE(models.resolve("tiny").has_value());
  EXPECT_THROW(models.acquire("tiny"), ModelNotFound);
  ASSERT_EQ(models.loaded().size(), 1u);
  EXPECT_EQ(models.loaded()[0].spec.name, "tiny");
  EXPECT_EQ(generate_two(lease), "done");

  // It comes back: the loaded model is used as it is, not loaded again.
  models.set_sources({std::make_shared<AliasSource>("tiny", tiny_model())});
  EXPECT_EQ(models.acquire("tiny").load_duration().count(), 0);
}

}  // namespace
}  // namespace hostlm
