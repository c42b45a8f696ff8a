// Per-tensor types of the quantization schemes against llama-quantize's own choices for models
// of the real Qwen3.5-0.8B and Qwen3.5-35B-A3B (mixture of experts) shapes
// (tests/data/quantize/llama_types*.txt, written by make_llama_reference.py with
// `llama-quantize --dry-run`), plus the rules spelled out.
#include "quantize/type_choice.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace hostlm::quantize {
namespace {

std::filesystem::path data_dir() {
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"); src != nullptr && *src != '\0')
    return std::filesystem::path(src) / "tests/data/quantize";
  return std::filesystem::path(__FILE__).parent_path() / "../../data/quantize";
}

DType type_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id)
    if (auto tr = dtype_traits(id); tr && tr->name == name) return static_cast<DType>(id);
  throw std::runtime_error("unknown type " + name);
}

struct Expected {
  std::vector<TensorDesc> tensors;
  std::vector<DType> types;
};

std::map<std::string, Expected> load_llama_types(const std::string& file) {
  std::ifstream in(data_dir() / file);
  if (!in) throw std::runtime_error("cannot open tests/data/quantize/" + file);
  std::map<std::string, Expected> out;
  std::string scheme, name, shape, from, to;
  while (in >> scheme >> name >> shape >> from >> to) {
    TensorDesc t;
    t.name = name;
    t.type = type_named(from);
    std::stringstream ss(shape);
    for (std::string d; std::getline(ss, d, ',');) t.ne.push_back(std::stoull(d));
    out[scheme].tensors.push_back(t);
    out[scheme].types.push_back(type_named(to));
  }
  return out;
}

// Every scheme of `file` gives every tensor llama-quantize's type.
void expect_llama_types(const std::string& file, const ModelFacts& facts, size_t min_tensors) {
  const auto expected = load_llama_types(file);
  ASSERT_EQ(expected.size(), 7u);
  for (const auto& [scheme_name, e] : expected) {
    const auto scheme = parse_quant_scheme(scheme_name);
    ASSERT_TRUE(scheme) << scheme_name;
    ASSERT_GT(e.tensors.size(), min_tensors);
    const std::vector<DType> got = choose_types(e.tensors, facts, *scheme);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(dtype_name(got[i]), dtype_name(e.types[i]))
          << file << " " << scheme_name << " " << e.tensors[i].name;
  }
}

TEST(TypeChoice, SameAsLlamaQuantizeForQwen35Shapes) {
  // 0.8B: 24 layers, 8 query heads over 2 KV heads
  expect_llama_types("llama_types.txt", ModelFacts{24, 4}, 300);
}

// The 35B-A3B shape: 40 layers, 256 experts, 16 query heads over 2 KV heads. The expert
// tensors are 3-D; ffn_down counts by layer although each layer has two (experts and shared).
TEST(TypeChoice, SameAsLlamaQuantizeForTheMixtureOfExpertsShape) {
  expect_llama_types("llama_types_35b_a3b.txt", ModelFacts{40, 8, 256}, 700);
}

// With exactly 8 experts llama.cpp gives the key and value projections Q8_0, and the attention
// output Q5_K in the 4-bit mixtures (tiny-moe-f32 converted, 64-wide rows, checked against
// llama-quantize in session 35: types and bytes equal; the rows there fall back, these do not).
TEST(TypeChoice, EightExpertsRaiseAttentionTypes) {
  const std::vector<TensorDesc> t = {{"blk.3.attn_k.weight", DType::F16, {256, 512}},
                                     {"blk.3.attn_output.weight", DType::F16, {512, 256}},
                                     {"blk.3.attn_v.weight", DType::F16, {256, 512}},
                                     {"blk.3.ffn_down_exps.weight", DType::F16, {256, 256, 8}},
                                     {"blk.3.ffn_down_shexp.weight", DType::F16, {256, 256}}};
  const ModelFacts eight{4, 2, 8};
  const auto q4km = choose_types(t, eight, QuantScheme::Q4_K_M);
  EXPECT_EQ(q4km[0], DType::Q8_0);
  EXPECT_EQ(q4km[1], DType::Q5_K);
  EXPECT_EQ(q4km[2], DType::Q8_0);
  // Layer 3 of 4 is in the last eighth: both of its ffn_down get more bits.
  EXPECT_EQ(q4km[3], DType::Q6_K);
  EXPECT_EQ(q4km[4], DType::Q6_K);
  const auto q6k = choose_types(t, eight, QuantScheme::Q6_K);
  EXPECT_EQ(q6k[0], DType::Q8_0);
  EXPECT_EQ(q6k[1], DType::Q6_K);
  const ModelFacts sixteen{4, 2, 16};
  EXPECT_EQ(choose_types(t, sixteen, QuantScheme::Q4_K_M)[0], DType::Q4_K);
}

TEST(TypeChoice, RulesOfTheMixtures) {
  // A 16-layer model with tied embeddings, GDN layers except every 4th, and odd widths.
  std::vector<TensorDesc> t;
  t.push_back({"token_embd.weight", DType::F16, {256, 1000}});
  t.push_back({"output_norm.weight", DType::F32, {256}});
  for (int i = 0; i < 16; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", DType::F32, {256}});
    if ((i + 1) % 4 == 0) {
      t.push_back({p + "attn_v.weight", DType::F16, {256, 128}});
      t.push_back({p + "attn_q.weight", DType::F16, {256, 512}});
    } else {
      t.push_back({p + "attn_qkv.weight", DType::F16, {256, 768}});
      t.push_back({p + "ssm_conv1d.weight", DType::F32, {4, 768}});
      t.push_back({p + "ssm_a", DType::F32, {8}});
    }
    t.push_back({p + "ffn_down.weight", DType::BF16, {96, 256}});  // 96 columns: fallbacks
    t.push_back({p + "ffn_up.weight", DType::F16, {256, 96}});
  }
  const std::vector<DType> types = choose_types(t, ModelFacts{16, 4}, QuantScheme::Q4_K_M);
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string& n = t[i].name;
    if (t[i].ne.size() == 1 || n.find("ssm_conv1d") != std::string::npos) {
      EXPECT_EQ(types[i], t[i].type) << n;  // 1-D tensors, norms and conv kernels keep their type
    } else if (n == "token_embd.weight") {
      EXPECT_EQ(types[i], DType::Q6_K) << n;  // tied: quantized like the output
    } else if (n.find("ffn_down") != std::string::npos) {
      const int layer = std::stoi(n.substr(4));
      const bool more = layer < 2 || layer >= 14 || (layer - 2) % 3 == 2;
      EXPECT_EQ(types[i], more ? DType::Q8_0 : DType::Q5_0) << n;  // Q6_K / Q4_K fallbacks
    } else if (n.find("ffn_up") != std::string::npos || n.find("attn_q.") != std::string::npos) {
      EXPECT_EQ(types[i], DType::Q4_K) << n;
    }
  }
  // The value projections of both layer kinds count together, in layer order.
  int n_q6 = 0;
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].name.find("attn_v") != std::string::npos ||
        t[i].name.find("attn_qkv") != std::string::npos)
      n_q6 += types[i] == DType::Q6_K;
  EXPECT_EQ(n_q6, 8);  // i < 2, i >= 14, i in {4, 7, 10, 13}
  // F16 and BF16 schemes touch only the matrices.
  const std::vector<DType> f16 = choose_types(t, ModelFacts{16, 4}, QuantScheme::F16);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].ne.size() == 2 && t[i].name.find("conv1d") == std::string::npos) {
      EXPECT_EQ(f16[i], DType::F16) << t[i].name;
    }
  }
}

}  // namespace
}  // namespace hostlm::quantize
