// Ollama's num_gpu through ModelManager::acquire (AcquireOptions::gpu_layers): 0 loads the
// model on the CPU backend whatever the server's default, a request for the same placement
// reuses the loaded model, and a contradiction with the server's backend is a clear error.
#include <gtest/gtest.h>

#include <string>

#include "hostlm/error.h"
#include "hostlm/registry.h"
#include "hostlm/serving.h"
#include "serving_test_support.h"

namespace hostlm {
namespace {

using testing::registry;
using testing::small_options;
using testing::tiny_model;

AcquireOptions cpu_only() {
  AcquireOptions o;
  o.gpu_layers = 0;  // Ollama's "num_gpu": 0
  return o;
}

TEST(ServingGpuLayers, NumGpuZeroLoadsOnTheCpu) {
  ModelManager models(registry(), small_options("auto"), {std::make_shared<PathModelSource>()});
  const std::string name = tiny_model().string();
  EXPECT_GT(models.acquire(name, cpu_only()).load_duration().count(), 0);
  ASSERT_EQ(models.loaded().size(), 1u);
  EXPECT_EQ(models.loaded()[0].backend, "cpu");
  EXPECT_EQ(models.loaded()[0].size_vram, 0u);
  // The same placement is served by the loaded model; another one (the server's default,
  // all layers on the backend) loads it again.
  EXPECT_EQ(models.acquire(name, cpu_only()).load_duration().count(), 0);
  EXPECT_GT(models.acquire(name).load_duration().count(), 0);
  EXPECT_EQ(models.loaded().size(), 1u);
}

TEST(ServingGpuLayers, NumGpuZeroWithACudaServerIsAClearError) {
  ModelManager models(registry(), small_options("cuda"), {std::make_shared<PathModelSource>()});
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
