// Given an HF folder with a tokenizer, `convert` carries the tokenizer and chat template
// into the GGUF the way llama.cpp's converter does, and the GGUF tokenizes identically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

#include "hostlm/gguf.h"
#include "hostlm/model_loader.h"
#include "hostlm/quantize.h"
#include "hostlm/tokenizer.h"
#include "reference_data.h"

namespace hostlm {
namespace {

TEST(Qwen35Convert, GgufCarriesTokenizerAndTemplate) {
  const auto folder = testing::source_dir() / "tests/data/models/tiny-tied-f32";
  const auto out = std::filesystem::temp_directory_path() /
                   ("hostlm-convert-" + std::to_string(::getpid()) + ".gguf");
  PluginRegistry registry;
  OpenedModelFiles hf(folder);
  registry.plugin_for(hf.files().architecture).convert_to_gguf(*hf.files().hf, DType::F16, out);

  auto gguf = GgufFile::open(out);
  EXPECT_EQ(gguf->get_string("general.architecture"), "qwen35");
  EXPECT_EQ(gguf->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(gguf->get_string("tokenizer.ggml.pre"), "qwen35");
  ASSERT_TRUE(gguf->get_string("tokenizer.chat_template"));
  EXPECT_NE(gguf->get_string("tokenizer.chat_template")->find("<|im_start|>"), std::string::npos);
  // Large matrices take the requested type; norms and the conv kernel stay F32.
  EXPECT_EQ(gguf->find_tensor("blk.0.ffn_up.weight")->type, DType::F16);
  EXPECT_EQ(gguf->find_tensor("blk.0.attn_norm.weight")->type, DType::F32);
  EXPECT_EQ(gguf->find_tensor("blk.0.ssm_conv1d.weight")->type, DType::F32);
  EXPECT_EQ(gguf->find_tensor("blk.0.ssm_a")->type, DType::F32);

  const Tokenizer from_hf = Tokenizer::load(folder);
  const Tokenizer from_gguf = Tokenizer::from_gguf(*gguf);
  for (const char* text : {"<|im_start|>user\nHello, wörld! 12345<|im_end|>\n",
                           "  tabs\tand\r\nnewlines  ", "<think>\nmaybe\n</think>\n\nyes"})
    EXPECT_EQ(from_hf.encode(text), from_gguf.encode(text)) << text;
  std::filesystem::remove(out);
}

// The mixture-of-experts checkpoint converts to what llama.cpp's own converter writes for it:
// the same model metadata and, tensor by tensor, the same names, shapes, types and bytes
// (experts stacked per projection, the router and the shared expert's gate kept in F32), as
// recorded from llama.cpp's output in tests/data/llama/ by tools/llama_convert_manifest.py.
TEST(Qwen35Convert, MoeGgufEqualsLlamaCppConverterOutput) {
  const auto root = testing::source_dir();
  PluginRegistry registry;
  OpenedModelFiles hf(root / "tests/data/models/tiny-moe-f32");
  for (const auto& [type, manifest] : {std::pair{DType::F32, "tiny-moe-f32.f32.json"},
                                       std::pair{DType::F16, "tiny-moe-f32.f16.json"}}) {
    const auto out = std::filesystem::temp_directory_path() /
                     ("hostlm-convert-moe-" + std::to_string(::getpid()) + ".gguf");
    registry.plugin_for(hf.files().architecture).convert_to_gguf(*hf.files().hf, type, out);
    EXPECT_EQ(GgufFile::open(out)->get_string("general.architecture"), "qwen35moe");
    const std::string cmd = "python3 '" + (root / "tools/llama_convert_manifest.py").string() +
                            "' check '" + out.string() + "' '" +
                            (root / "tests/data/llama" / manifest).string() + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(out);
  }
}

// `hostlm quantize` of that F32 file writes what llama-quantize writes of it: the same types,
// bytes and shapes (trailing unit dimensions dropped) in Q8_0, Q4_K_M (the 8-expert rules)
// and MXFP4_MOE (experts in MXFP4, the rest Q8_0).
TEST(Qwen35Convert, MoeQuantizedEqualsLlamaQuantizeOutput) {
  const auto root = testing::source_dir();
  PluginRegistry registry;
  const auto dir = std::filesystem::temp_directory_path();
  const auto f32 = dir / ("hostlm-moe-f32-" + std::to_string(::getpid()) + ".gguf");
  {
    OpenedModelFiles hf(root / "tests/data/models/tiny-moe-f32");
    registry.plugin_for(hf.files().architecture).convert_to_gguf(*hf.files().hf, DType::F32, f32);
  }
  for (const auto& [scheme, manifest] :
       {std::pair{QuantScheme::Q8_0, "tiny-moe-f32.q8_0.json"},
        std::pair{QuantScheme::Q4_K_M, "tiny-moe-f32.q4_k_m.json"},
        std::pair{QuantScheme::MXFP4_MOE, "tiny-moe-f32.mxfp4_moe.json"}}) {
    const auto out = dir / ("hostlm-moe-q-" + std::to_string(::getpid()) + ".gguf");
    quantize_gguf_file(f32, out, scheme);
    const std::string cmd = "python3 '" + (root / "tools/llama_convert_manifest.py").string() +
                            "' check '" + out.string() + "' '" +
                            (root / "tests/data/llama" / manifest).string() + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(out);
  }
  std::filesystem::remove(f32);
}

}  // namespace
}  // namespace hostlm
