// libFuzzer target for the Qwen3.5 plugin's hyper-parameter readers: a Hugging Face config.json
// (parsed as a model folder's is) and a GGUF file's qwen35.* or qwen35moe.* metadata.
//
// Input byte 0 picks the form. Even: the rest is config.json text. Odd: the rest is a list of
// metadata records (byte 0 % 4 == 3: of a qwen35moe file, whose keys carry that prefix), each [key
// index][value kind][payload], written out as a GGUF image by our writer and read back, because
// random bytes almost never form a GGUF whose keys the reader would look at. Beyond "no crash, only
// hostlm::Error naming the file" it checks what the loader relies on after a config is accepted:
// sizes within the documented bounds (so the products the loader forms stay inside int64) and one
// layer kind per layer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/gguf_emit.h"
#include "gguf/gguf_open.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "qwen35_config.h"
#include "safetensors/json_text.h"

namespace {

constexpr const char* kJsonName = "fuzz/config.json";
constexpr const char* kGgufName = "fuzz.gguf";

void check(bool ok) {
  if (!ok) std::abort();
}

void check_accepted(const hostlm::qwen35::Config& c) {
  check(c.n_layers > 0 && c.n_layers <= 4096);
  check(static_cast<int64_t>(c.full_attention.size()) == c.n_layers);
  check(c.hidden > 0 && c.hidden <= (1 << 20));
  if (c.moe()) {
    check(c.n_experts <= 4096 && c.n_experts_used > 0 && c.n_experts_used <= c.n_experts);
    check(c.expert_ffn > 0 && c.expert_ffn <= (1 << 20));
    check(c.shared_ffn >= 0 && c.shared_ffn <= (1 << 20));
    (void)(c.n_experts * c.expert_ffn * c.hidden);  // the stacked tensors' element counts
  } else {
    check(c.ffn > 0 && c.ffn <= (1 << 20));
  }
  check(c.n_head > 0 && c.n_head_kv > 0 && c.n_head % c.n_head_kv == 0);
  check(c.head_dim > 0 && c.head_dim <= 4096 && c.dk > 0 && c.dk <= 4096 && c.dv > 0);
  check(c.rot_dims > 0 && c.rot_dims <= c.head_dim && c.rot_dims % 2 == 0);
  check(c.n_v_heads % c.n_k_heads == 0 && c.conv_kernel > 0 && c.conv_kernel <= 64);
  check(c.eps > 0.0f && c.eps < 1.0f && c.rope_theta > 0.0);
  (void)c.conv_channels();  // UBSan checks this product does not overflow
  (void)(c.n_vocab * c.hidden);
}

template <class F>
void expect_only_errors_naming(const char* name, F&& f) {
  try {
    f();
  } catch (const hostlm::Error& e) {
    check(std::string_view(e.what()).starts_with(std::string(name) + ": "));
  }
}

void fuzz_json(std::string_view text) {
  expect_only_errors_naming(kJsonName, [&] {
    const nlohmann::json root = hostlm::safetensors::parse_json(text, kJsonName, "config");
    check_accepted(hostlm::qwen35::config_from_hf(root, kJsonName));
  });
}

// The keys config_from_gguf reads, and a few it must ignore.
constexpr const char* kKeys[] = {
    "qwen35.embedding_length",
    "qwen35.block_count",
    "qwen35.nextn_predict_layers",
    "qwen35.feed_forward_length",
    "qwen35.attention.head_count",
    "qwen35.attention.head_count_kv",
    "qwen35.attention.key_length",
    "qwen35.attention.value_length",
    "qwen35.attention.layer_norm_rms_epsilon",
    "qwen35.rope.freq_base",
    "qwen35.rope.dimension_count",
    "qwen35.rope.dimension_sections",
    "qwen35.ssm.conv_kernel",
    "qwen35.ssm.state_size",
    "qwen35.ssm.group_count",
    "qwen35.ssm.time_step_rank",
    "qwen35.ssm.inner_size",
    "qwen35.context_length",
    "qwen35.full_attention_interval",
    "qwen35.attention.recurrent_layers",
    "tokenizer.ggml.tokens",
    "general.architecture",
    "qwen35.expert_count",
    "qwen35.expert_used_count",
    "qwen35.expert_feed_forward_length",
    "qwen35.expert_shared_feed_forward_length",
};

// Reads little-endian integers off the front of the input; zeros once it runs out.
struct Reader {
  std::span<const uint8_t> rest;
  uint64_t take(size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes && !rest.empty(); ++i) {
      v |= uint64_t{rest[0]} << (8 * i);
      rest = rest.subspan(1);
    }
    return v;
  }
};

hostlm::GgufValue read_value(Reader& in) {
  using hostlm::GgufType;
  using hostlm::GgufValue;
  const uint64_t kind = in.take(1) % 9;
  switch (kind) {
    case 0:  // small sizes are what real files hold, so most draws are one byte
      return GgufValue::u32(static_cast<uint32_t>(in.take(1)));
    case 1:
      return GgufValue::u32(static_cast<uint32_t>(in.take(4)));
    case 2:
      return GgufValue::i32(static_cast<int32_t>(in.take(4)));
    case 3:
      return GgufValue::u64(in.take(8));
    case 4: {
      float f;
      const auto bits = static_cast<uint32_t>(in.take(4));
      std::memcpy(&f, &bits, sizeof f);
      return GgufValue::f32(f);
    }
    case 5:
      return GgufValue::boolean(in.take(1) & 1);
    case 6:
      return GgufValue::string(std::string(in.take(1) % 8, 'x'));
    case 7:
    case 8: {
      // Arrays of per-layer flags or sections: small integers or booleans, up to 255 long.
      const size_t n = in.take(1);
      std::vector<GgufValue> elements;
      for (size_t i = 0; i < n; ++i)
        elements.push_back(kind == 7 ? GgufValue::i32(static_cast<int8_t>(in.take(1)))
                                     : GgufValue::boolean(in.take(1) & 1));
      return GgufValue::array(kind == 7 ? GgufType::I32 : GgufType::BOOL, std::move(elements));
    }
  }
  return GgufValue::u32(0);
}

void fuzz_gguf(std::span<const uint8_t> data, bool moe) {
  Reader in{data};
  std::vector<std::pair<std::string, hostlm::GgufValue>> metadata;
  metadata.emplace_back("general.architecture",
                        hostlm::GgufValue::string(moe ? "qwen35moe" : "qwen35"));
  while (!in.rest.empty() && metadata.size() < 64) {
    std::string key = kKeys[in.take(1) % std::size(kKeys)];
    if (moe && key.starts_with("qwen35.")) key = "qwen35moe." + key.substr(7);
    hostlm::GgufValue value = read_value(in);
    bool seen = false;
    for (auto& kv : metadata)
      if (kv.first == key) seen = true;
    if (!seen) metadata.emplace_back(key, std::move(value));
  }
  std::vector<unsigned char> image;
  hostlm::gguf::emit_gguf(32, metadata, {}, kGgufName, [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    image.insert(image.end(), b, b + n);
  });
  const auto file = hostlm::gguf::open_gguf_bytes(image, kGgufName);
  expect_only_errors_naming(kGgufName, [&] {
    hostlm::qwen35::Config c = hostlm::qwen35::config_from_gguf(*file);
    if (c.n_vocab == 0) c.n_vocab = 1000;  // the loader takes it from token_embd then
    hostlm::qwen35::validate_config(c, kGgufName);
    check_accepted(c);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 0)
    fuzz_json(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()));
  else
    fuzz_gguf(rest, data[0] % 4 == 3);
  return 0;
}
