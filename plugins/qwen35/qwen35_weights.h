// The tensors of one model in GGUF naming and convention, whatever file they came from.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "hostlm/plugin_api.h"
#include "qwen35_tensors.h"

namespace hostlm::qwen35 {

class WeightSource {
 public:
  // Reads the config and resolves every tensor (transforming HF tensors once, up front).
  explicit WeightSource(const ModelFiles& files);
  const Config& config() const { return config_; }
  const std::string& where() const { return where_; }
  // nullptr when absent; shape checked against `shape` (PyTorch order) when given.
  const TensorView* find(const std::string& gguf_name) const;
  const TensorView& require(const std::string& gguf_name, const std::vector<int64_t>& shape) const;
  std::vector<float> require_f32(const std::string& gguf_name,
                                 const std::vector<int64_t>& shape) const;

 private:
  Config config_;
  std::string where_;
  std::map<std::string, TransformedTensor> tensors_;
};

}  // namespace hostlm::qwen35
