// A Hugging Face folder whose config.json holds the wrong type or an absurd size fails to load
// with an error that names config.json and the key, never with a library exception, a huge
// allocation or an undefined conversion (fuzz_model_config searches the same paths).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hostlm/error.h"
#include "hostlm/model_loader.h"
#include "reference_data.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;

class ConfigErrors : public ::testing::Test {
 protected:
  virtual const char* model() const { return "tiny-tied-f32"; }
  void SetUp() override {
    const fs::path source = testing::source_dir() / "tests/data/models" / model();
    folder_ = fs::temp_directory_path() / ("hostlm-config-" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    for (const char* name :
         {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
      fs::copy_file(source / name, folder_ / name);
    std::ifstream in(source / "config.json");
    config_ = nlohmann::json::parse(in);
  }
  void TearDown() override { fs::remove_all(folder_); }

  // Loads the folder with `config` as its config.json; the error text, or "" when it loaded.
  std::string load_error(const nlohmann::json& config) {
    {
      std::ofstream out(folder_ / "config.json", std::ios::trunc);
      out << config.dump();
    }
    try {
      PluginRegistry registry;
      ModelLoadOptions cpu;
      cpu.backend = "cpu";  // where every model here runs, GPU or not
      LoadedModel loaded(registry, folder_, cpu);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }

  void expect_error(const nlohmann::json& config, const std::string& problem) {
    const std::string error = load_error(config);
    const std::string where = (folder_ / "config.json").string() + ": ";
    EXPECT_EQ(error.rfind(where, 0), 0u) << error;
    EXPECT_NE(error.find(problem), std::string::npos) << "wanted '" << problem << "' in: " << error;
  }

  fs::path folder_;
  nlohmann::json config_;
};

TEST_F(ConfigErrors, TheUnchangedCopyLoads) { EXPECT_EQ(load_error(config_), ""); }

TEST_F(ConfigErrors, WrongTypesNameTheKey) {
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json c = config_;
    c[key] = std::move(value);
    return c;
  };
  expect_error(with("rms_norm_eps", "small"), "'rms_norm_eps' must be a finite number");
  expect_error(with("partial_rotary_factor", true), "'partial_rotary_factor' must be a finite");
  expect_error(with("rope_theta", nlohmann::json::array()), "'rope_theta' must be a finite number");
  expect_error(with("hidden_size", 64.5), "'hidden_size' must be an integer");
  expect_error(with("vocab_size", 18446744073709551615u), "'vocab_size' must be an integer");
  expect_error(with("layer_types", {"linear_attention", 3, "linear_attention", "full_attention"}),
               "'layer_types' must be a list of strings");
  expect_error(with("text_config", 7), "'text_config' must be an object");
  nlohmann::json c = config_;
  c["rope_parameters"]["rope_type"] = 1;
  expect_error(c, "'rope_type' must be a string");
  c = config_;
  c["rope_parameters"]["mrope_section"] = {1, 1.5e300, 2};
  expect_error(c, "'mrope_section' must be a list of integers");
}

TEST_F(ConfigErrors, OutOfRangeValuesAreRefused) {
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json c = config_;
    c[key] = std::move(value);
    if (std::string(key) == "num_hidden_layers") c.erase("layer_types");
    return c;
  };
  // A layer table of 2^50 entries was allocated before anything else was checked.
  expect_error(with("num_hidden_layers", int64_t{1} << 50),
               "layer count 1125899906842624 is beyond the supported 4096");
  expect_error(with("num_hidden_layers", -4), "layer count must be positive (got -4)");
  expect_error(with("hidden_size", int64_t{1} << 40), "is beyond the supported");
  expect_error(with("linear_key_head_dim", 1 << 20), "is beyond the supported");
  expect_error(with("head_dim", 1 << 30), "head dim 1073741824 is beyond the supported 4096");
  // Converted to an integer rotary width: past int64 the conversion was undefined.
  for (const double factor : {1e300, 0.0}) {
    nlohmann::json c = config_;
    c["rope_parameters"]["partial_rotary_factor"] = factor;
    expect_error(c, "'partial_rotary_factor' must lie in (0, 1]");
  }
  // Converted to float: past its range the conversion was undefined.
  expect_error(with("rms_norm_eps", 1e300), "'rms_norm_eps' must lie in (0, 1)");
  expect_error(with("rms_norm_eps", -1e-6), "'rms_norm_eps' must lie in (0, 1)");
}

// The mixture-of-experts keys of a Qwen3_5Moe config.json.
class MoeConfigErrors : public ConfigErrors {
 protected:
  const char* model() const override { return "tiny-moe-f32"; }
  nlohmann::json with(const char* key, nlohmann::json value) const {
    nlohmann::json c = config_;
    c[key] = std::move(value);
    return c;
  }
};

TEST_F(MoeConfigErrors, TheUnchangedCopyLoads) { EXPECT_EQ(load_error(config_), ""); }

TEST_F(MoeConfigErrors, ExpertKeysAreCheckedByName) {
  expect_error(with("num_experts_per_tok", 9),
               "experts used per token 9 is beyond the supported 8");
  expect_error(with("num_experts_per_tok", 0), "experts used per token must be positive");
  expect_error(with("num_experts", int64_t{1} << 20), "expert count 1048576 is beyond");
  expect_error(with("moe_intermediate_size", "wide"), "'moe_intermediate_size' must be an integer");
  expect_error(with("shared_expert_intermediate_size", -1), "shared expert feed-forward size -1");
  nlohmann::json c = config_;
  c.erase("num_experts_per_tok");
  expect_error(c, "missing key 'num_experts_per_tok'");
  // More experts than the checkpoint holds: the first missing tensor is named.
  const std::string error = load_error(with("num_experts", 16));
  EXPECT_NE(error.find("mlp.experts.8.gate_proj.weight' is missing"), std::string::npos) << error;
}

}  // namespace
}  // namespace hostlm
