// The test plugin, found through a manifest and loaded on demand, works through nothing
// but the ArchitecturePlugin and Model interfaces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <span>

#include "hostlm/ops.h"
#include "hostlm/safetensors.h"
#include "registry_test_support.h"

namespace hostlm::test {
namespace {

using ::testing::HasSubstr;

bool is_mapped(const fs::path& library) {
  std::ifstream maps("/proc/self/maps");
  std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  return text.find(library.string()) != std::string::npos;
}

std::vector<float> one_hot(int64_t index) {
  std::vector<float> v(16, 0.0f);
  v[static_cast<size_t>(index)] = 1.0f;
  return v;
}

// The test plugin converts nothing, so an empty checkpoint is enough to ask it to.
class EmptyCheckpoint final : public HfCheckpoint {
 public:
  const fs::path& folder() const override { return folder_; }
  const nlohmann::json& config() const override { return config_; }
  const std::vector<TensorView>& tensors() const override { return tensors_; }
  const TensorView* find(std::string_view) const override { return nullptr; }

 private:
  fs::path folder_ = "/nowhere";
  nlohmann::json config_ = nlohmann::json::object();
  std::vector<TensorView> tensors_;
};

TEST(TestPlugin, ModelLogitsAreOneHotAtNextToken) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});
  ASSERT_TRUE(registry.problems().empty()) << all_problems(registry);

  ArchitecturePlugin& plugin = registry.plugin_for("hostlm-test");
  std::unique_ptr<Backend> backend = create_backend("cpu");
  ModelFiles files;
  files.path = "/nowhere/model.gguf";
  files.architecture = "hostlm-test";
  std::unique_ptr<Model> model = plugin.load(files, *backend, LoadOptions{});
  ASSERT_EQ(model->info().n_vocab, 16);
  EXPECT_EQ(model->info().architecture, "hostlm-test");

  std::unique_ptr<Sequence> seq = model->new_sequence(32);
  const std::vector<int32_t> prompt{3, 7, 15};
  std::vector<float> all(3 * 16);
  model->eval(*seq, prompt, true, all);
  EXPECT_EQ(seq->n_past(), 3);
  for (size_t t = 0; t < prompt.size(); ++t)
    EXPECT_EQ(std::vector<float>(all.begin() + 16 * t, all.begin() + 16 * (t + 1)),
              one_hot((prompt[t] + 1) % 16))
        << "token " << t;

  std::vector<float> last(16);
  const std::vector<int32_t> next{9};
  model->eval(*seq, next, false, last);
  EXPECT_EQ(last, one_hot(10));
  EXPECT_EQ(seq->n_past(), 4);

  model.reset();  // models run the plugin's code: they go before the registry does
}

TEST(TestPlugin, GgufAndHfNamesReachTheSamePlugin) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_EQ(&registry.plugin_for("hostlm-test"), &registry.plugin_for("HostlmTestForCausalLM"));
}

TEST(TestPlugin, ErrorsThrownInsideThePluginReachTheHostAsHostlmError) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});
  ArchitecturePlugin& plugin = registry.plugin_for("HostlmTestForCausalLM");

  try {
    plugin.convert_to_gguf(EmptyCheckpoint{}, DType::F16, "/nowhere/out.gguf");
    ADD_FAILURE() << "convert_to_gguf did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not supported"));
  }
}

TEST(TestPlugin, LibraryIsLoadedOnFirstUseAndUnloadedWithTheRegistry) {
  // A private copy, so that its path in /proc/self/maps is this test's alone.
  TempDir dir;
  fs::copy_file(fixtures_dir() / "testplugin" / "hostlm_test.json",
                dir.path() / "hostlm_test.json");
  fs::copy_file(build_dir() / "lib" / "libhostlm_testplugin.so",
                dir.path() / "libhostlm_testplugin.so");
  const fs::path library = dir.path() / "libhostlm_testplugin.so";
  {
    PluginRegistry registry({dir.path()});
    ASSERT_EQ(registry.manifests().size(), 1u);
    EXPECT_EQ(registry.manifests()[0].library, library);
    EXPECT_FALSE(is_mapped(library)) << "loaded before anyone asked for it";

    registry.plugin_for("hostlm-test");
    EXPECT_TRUE(is_mapped(library));
    registry.plugin_for("HostlmTestForCausalLM");
    EXPECT_TRUE(is_mapped(library));
  }
  EXPECT_FALSE(is_mapped(library)) << "still loaded after the registry is gone";
}

}  // namespace
}  // namespace hostlm::test
