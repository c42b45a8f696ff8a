// PluginRegistry::rescan (a server's SIGHUP): manifests installed or removed since are seen,
// and plugins already loaded stay loaded and are handed out again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "hostlm/ops.h"
#include "registry_test_support.h"

namespace hostlm::test {
namespace {

using ::testing::HasSubstr;

// Loads a model through the plugin and runs one token: the plugin's code is still there.
int32_t argmax_after(ArchitecturePlugin& plugin, int32_t token) {
  std::unique_ptr<Backend> backend = create_backend("cpu");
  ModelFiles files;
  files.path = "/nowhere/model.gguf";
  files.architecture = "hostlm-test";
  std::unique_ptr<Model> model = plugin.load(files, *backend, LoadOptions{});
  std::unique_ptr<Sequence> seq = model->new_sequence(8);
  const std::vector<int32_t> prompt{token};
  std::vector<float> logits(static_cast<size_t>(model->info().n_vocab));
  model->eval(*seq, prompt, false, logits);
  seq.reset();
  model.reset();
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(Rescan, FindsAManifestInstalledSince) {
  PluginFolder folder({});
  PluginRegistry registry({folder.root()});
  EXPECT_TRUE(registry.manifests().empty());
  EXPECT_THAT(plugin_for_error(registry, "hostlm-test"), HasSubstr("no plugin claims"));

  folder.add("testplugin/hostlm_test.json");
  EXPECT_THAT(plugin_for_error(registry, "hostlm-test"), HasSubstr("no plugin claims"))
      << "nothing changes before the rescan";
  registry.rescan({folder.root()});
  ASSERT_EQ(registry.manifests().size(), 1u) << all_problems(registry);
  EXPECT_TRUE(registry.problems().empty()) << all_problems(registry);
  EXPECT_EQ(argmax_after(registry.plugin_for("hostlm-test"), 4), 5);
}

TEST(Rescan, KeepsLoadedPluginsAndHandsThemOutAgain) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});
  ArchitecturePlugin& before = registry.plugin_for("hostlm-test");

  registry.rescan({folder.root()});
  EXPECT_EQ(&registry.plugin_for("hostlm-test"), &before) << "same library: same plugin";

  // The manifest goes: the architecture is unknown to new loads, the loaded plugin still runs.
  fs::remove(folder.manifest("hostlm_test.json"));
  registry.rescan({folder.root()});
  EXPECT_TRUE(registry.manifests().empty());
  EXPECT_THAT(plugin_for_error(registry, "hostlm-test"), HasSubstr("no plugin claims"));
  EXPECT_EQ(argmax_after(before, 9), 10);

  folder.add("testplugin/hostlm_test.json");
  registry.rescan({folder.root()});
  EXPECT_EQ(&registry.plugin_for("hostlm-test"), &before);
}

TEST(Rescan, TakesANewSearchPathAndReportsNewProblems) {
  PluginFolder good({"testplugin/hostlm_test.json"});
  PluginFolder bad({"missing_library/hostlm_ghost.json"});
  PluginRegistry registry({good.root()});
  EXPECT_TRUE(registry.problems().empty()) << all_problems(registry);

  registry.rescan({good.root(), bad.root()});
  EXPECT_EQ(registry.search_path(), (std::vector<fs::path>{good.root(), bad.root()}));
  EXPECT_EQ(registry.manifests().size(), 2u);
  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0], HasSubstr("hostlm_ghost.json"));
}

// plugin_for from request threads while the signal thread rescans (run under ASan in CI).
TEST(Rescan, IsSafeWhileOtherThreadsLoad) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});
  ArchitecturePlugin* first = &registry.plugin_for("hostlm-test");
  std::atomic<bool> stop{false};
  std::atomic<int> mismatches{0}, calls{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t)
    users.emplace_back([&] {
      while (!stop) {
        if (&registry.plugin_for("hostlm-test") != first) ++mismatches;
        ++calls;
      }
    });
  // Both users run before, during and after the rescans (on a busy machine they may start late).
  while (calls < 2) std::this_thread::yield();
  const int before = calls;
  for (int i = 0; i < 50; ++i) registry.rescan({folder.root()});
  while (calls < before + 2) std::this_thread::yield();
  stop = true;
  for (std::thread& t : users) t.join();
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace hostlm::test
