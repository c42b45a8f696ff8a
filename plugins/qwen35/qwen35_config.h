// Qwen3.5 hyper-parameters, read by name from a GGUF or a Hugging Face config.json: the dense
// models (GGUF architecture qwen35) and the mixture-of-experts ones (qwen35moe).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hostlm {
class GgufFile;
}

namespace hostlm::qwen35 {

struct Config {
  int64_t n_vocab = 0;
  int64_t hidden = 0;     // H
  int64_t ffn = 0;        // F
  int64_t n_layers = 0;   // trunk layers (MTP excluded)
  int64_t n_nextn = 0;    // MTP layers stored after the trunk
  int64_t n_head = 0;     // Nq
  int64_t n_head_kv = 0;  // Nkv
  int64_t head_dim = 0;   // D
  int64_t rot_dims = 0;   // R
  double rope_theta = 1e7;
  std::vector<int64_t> mrope_sections;  // as stored (text-only models use plain NeoX RoPE)
  int64_t n_k_heads = 0;                // Hk
  int64_t n_v_heads = 0;                // Hv
  int64_t dk = 0, dv = 0;
  int64_t conv_kernel = 4;  // Kc
  float eps = 1e-6f;
  int64_t n_ctx_train = 0;
  // Mixture of experts (qwen35moe; all zero for the dense models): E experts of FFN width Fe,
  // k used per token, and an always-on shared expert of width Fs (0: none).
  int64_t n_experts = 0;             // E
  int64_t n_experts_used = 0;        // k
  int64_t expert_ffn = 0;            // Fe
  int64_t shared_ffn = 0;            // Fs
  bool tied = false;                 // decided from tensor presence by the loader
  std::vector<bool> full_attention;  // per trunk layer
  int64_t full_attention_interval = 4;

  int64_t key_dim() const { return n_k_heads * dk; }
  int64_t value_dim() const { return n_v_heads * dv; }
  int64_t conv_channels() const { return 2 * key_dim() + value_dim(); }
  bool moe() const { return n_experts > 0; }
  const char* gguf_architecture() const { return moe() ? "qwen35moe" : "qwen35"; }
  // The widest feed-forward activation any layer produces.
  int64_t widest_ffn() const;
  bool layer_types_regular() const;  // pattern equals the interval rule
};

// Throws hostlm::Error naming the file and the key on missing or inconsistent values.
Config config_from_gguf(const GgufFile& gguf);
// Checks sizes after the loader filled what only tensors tell (vocabulary of a GGUF).
void validate_config(const Config& c, const std::string& where);
Config config_from_hf(const nlohmann::json& config_json, const std::string& config_path);

}  // namespace hostlm::qwen35
