// ModelLoadOptions::gpu_layers (the CLI's --gpu-layers, llama.cpp's -ngl): 0 picks the CPU
// backend, a count that the CPU backend cannot honour changes nothing, and a bad count or a
// contradiction with the asked backend is a clear error. (A GPU/CPU split needs a GPU:
// tests/backends/cuda/logits_test.cpp; its plumbing: tests/host/engine/split_model_test.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "hostlm/error.h"
#include "hostlm/model_loader.h"
#include "plugins/qwen35/reference_data.h"

namespace hostlm {
namespace {

std::filesystem::path tiny() {
  return testing::source_dir() / "tests" / "data" / "models" / "tiny-tied-f32";
}

ModelLoadOptions with(const std::string& backend, int gpu_layers) {
  ModelLoadOptions o;
  o.backend = backend;
  o.gpu_layers = gpu_layers;
  return o;
}

TEST(GpuLayers, ZeroPicksTheCpuBackend) {
  PluginRegistry registry;
  LoadedModel loaded(registry, tiny(), with("auto", 0));
  EXPECT_EQ(loaded.backend().name(), "cpu");
}

TEST(GpuLayers, CountsOnTheCpuBackendChangeNothing) {
  PluginRegistry registry;
  for (int n : {-1, 1, 99}) {
    LoadedModel loaded(registry, tiny(), with("cpu", n));
    EXPECT_EQ(loaded.backend().name(), "cpu") << n;
  }
}

TEST(GpuLayers, ContradictionsAndBadCountsAreClearErrors) {
  PluginRegistry registry;
  try {
    LoadedModel loaded(registry, tiny(), with("cuda", 0));
    ADD_FAILURE() << "cuda with no GPU layers loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu layers 0"), std::string::npos) << e.what();
  }
  try {
    LoadedModel loaded(registry, tiny(), with("cpu", -2));
    ADD_FAILURE() << "gpu layers -2 loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hostlm
