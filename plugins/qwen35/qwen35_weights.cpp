#include "qwen35_weights.h"

#include <cstring>

#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/safetensors.h"
#include "hostlm/tensor_convert.h"

namespace hostlm::qwen35 {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

WeightSource::WeightSource(const ModelFiles& files) : where_(files.path.string()) {
  if (files.gguf) {
    config_ = config_from_gguf(*files.gguf);
    for (const GgufTensorInfo& info : files.gguf->tensors())
      tensors_.emplace(info.name, TransformedTensor{files.gguf->view(info), {}});
    if (config_.n_vocab == 0) {
      auto it = tensors_.find("token_embd.weight");
      if (it != tensors_.end()) config_.n_vocab = it->second.view.rows();
    }
    validate_config(config_, where_);
    // Layer kinds must agree with the tensors present (spec: fail loudly on a mismatch).
    for (int64_t i = 0; i < config_.n_layers; ++i) {
      const bool has_attn = tensors_.count("blk." + std::to_string(i) + ".attn_q.weight") > 0;
      const bool has_ssm = tensors_.count("blk." + std::to_string(i) + ".ssm_out.weight") > 0;
      if (config_.full_attention[i] ? !has_attn || has_ssm : has_attn || !has_ssm)
        throw Error(where_ + ": layer " + std::to_string(i) + " should be " +
                    (config_.full_attention[i] ? "full attention" : "Gated DeltaNet") +
                    " by the metadata, but its tensors say otherwise");
    }
  } else {
    const HfCheckpoint& hf = *files.hf;
    config_ = config_from_hf(hf.config(), (hf.folder() / "config.json").string());
    const std::string prefix = hf_prefix(hf);
    for (const TensorRule& rule : tensor_rules(config_)) {
      auto t = transform_hf_tensor(hf, prefix, rule, config_);
      if (t) tensors_.emplace(rule.gguf_name, std::move(*t));
    }
  }
  config_.tied = tensors_.count("output.weight") == 0;
}

const TensorView* WeightSource::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second.view;
}

const TensorView& WeightSource::require(const std::string& name,
                                        const std::vector<int64_t>& shape) const {
  const TensorView* v = find(name);
  if (!v) throw Error(where_ + ": tensor '" + name + "' is missing");
  // 1-D GGUF tensors may be stored with trailing unit dims; compare element layouts.
  std::vector<int64_t> got = v->shape;
  while (got.size() > shape.size() && got.front() == 1) got.erase(got.begin());
  if (got != shape)
    throw Error(where_ + ": tensor '" + name + "' has shape " + shape_text(v->shape) +
                ", expected " + shape_text(shape));
  return *v;
}

std::vector<float> WeightSource::require_f32(const std::string& name,
                                             const std::vector<int64_t>& shape) const {
  return tensor_to_f32(require(name, shape));
}

}  // namespace hostlm::qwen35
