// Ollama's num_gpu through ModelManager::acquire (AcquireOptions::gpu_layers): 0 loads the
// model on the CPU backend whatever the server's default, a request for the same placement
// reuses the loaded model, and a contradiction with the server's backend is a clear error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "hostlm/error.h"
#include "hostlm/registry.h"
#include "hostlm/serving.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;

fs::path tiny_model() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  const fs::path root = src ? fs::path(src) : fs::path(__FILE__).parent_path() / "../../..";
  return root / "tests" / "data" / "models" / "tiny-tied-f32";
}

PluginRegistry& registry() {
  static PluginRegistry r;
  return r;
}

AcquireOptions cpu_only() {
  AcquireOptions o;
  o.gpu_layers = 0;  // Ollama's "num_gpu": 0
  return o;
}

ServingOptions options_on(const std::string& backend) {
  ServingOptions o;
  o.context = 256;
  o.parallel = 1;
  o.log_memory = false;
  o.load.backend = backend;
  return o;
}

TEST(ServingGpuLayers, NumGpuZeroLoadsOnTheCpu) {
  ModelManager models(registry(), options_on("auto"), {std::make_shared<PathModelSource>()});
  const std::string name = tiny_model().string();
  { models.acquire(name, cpu_only()); }
  ASSERT_EQ(models.loaded().size(), 1u);
  EXPECT_EQ(models.loaded()[0].backend, "cpu");
  EXPECT_EQ(models.loaded()[0].size_vram, 0u);
  { models.acquire(name, cpu_only()); }
  EXPECT_EQ(models.loaded().size(), 1u);
}

TEST(ServingGpuLayers, NumGpuZeroWithACudaServerIsAClearError) {
  ModelManager models(registry(), options_on("cuda"), {std::make_shared<PathModelSource>()});
  try {
    models.acquire(tiny_model().string(), cpu_only());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu layers 0"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(models.loaded().empty());
}

}  // namespace
}  // namespace hostlm
