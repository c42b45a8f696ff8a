// A tiny plugin built only for the tests. It proves the registry knows nothing of Qwen3.5,
// and it gives the tests a model whose logits are known without any weights: after token
// t, the logits are one-hot at (t + 1) % 16.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "hostlm/error.h"
#include "hostlm/plugin_api.h"

namespace {

constexpr int64_t kVocab = 16;
constexpr int64_t kContext = 64;

class TestSequence final : public hostlm::Sequence {
 public:
  explicit TestSequence(int64_t capacity) : capacity_(capacity) {}
  int64_t n_past() const override { return n_past_; }
  int64_t capacity() const override { return capacity_; }
  void advance(int64_t n) { n_past_ += n; }

 private:
  int64_t n_past_ = 0;
  int64_t capacity_;
};

class TestModel final : public hostlm::Model {
 public:
  explicit TestModel(const std::string& architecture) {
    info_.architecture = architecture;
    info_.n_vocab = kVocab;
    info_.n_ctx_train = kContext;
    info_.n_layers = 0;
    info_.description = "hostlm test model: logits one-hot at (last token + 1) % 16";
  }

  const hostlm::ModelInfo& info() const override { return info_; }

  std::unique_ptr<hostlm::Sequence> new_sequence(int64_t capacity) override {
    if (capacity <= 0 || capacity > kContext)
      throw hostlm::Error("test model: sequence capacity must be in 1.." +
                          std::to_string(kContext) + ", got " + std::to_string(capacity));
    return std::make_unique<TestSequence>(capacity);
  }

  void eval(hostlm::Sequence& seq, std::span<const int32_t> tokens, bool all_logits,
            std::span<float> logits) override {
    auto* own = dynamic_cast<TestSequence*>(&seq);
    if (!own) throw hostlm::Error("test model: sequence was made by another model");
    const auto n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw hostlm::Error("test model: no tokens to evaluate");
    if (own->n_past() + n > own->capacity())
      throw hostlm::Error("test model: sequence capacity exceeded");
    const int64_t rows = all_logits ? n : 1;
    if (static_cast<int64_t>(logits.size()) < rows * kVocab)
      throw hostlm::Error("test model: logits buffer too small");
    for (int32_t t : tokens)
      if (t < 0 || t >= kVocab)
        throw hostlm::Error("test model: token " + std::to_string(t) + " outside vocab");

    std::fill(logits.begin(), logits.begin() + rows * kVocab, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t token = tokens[static_cast<size_t>(n - rows + r)];
      logits[static_cast<size_t>(r * kVocab + (token + 1) % kVocab)] = 1.0f;
    }
    own->advance(n);
  }

 private:
  hostlm::ModelInfo info_;
};

class TestPlugin final : public hostlm::ArchitecturePlugin {
 public:
  std::unique_ptr<hostlm::Model> load(const hostlm::ModelFiles& files, hostlm::Backend&,
                                      const hostlm::LoadOptions&) override {
    return std::make_unique<TestModel>(files.architecture);
  }

  void convert_to_gguf(const hostlm::HfCheckpoint&, hostlm::DType,
                       const std::filesystem::path&) override {
    throw hostlm::Error("hostlm test plugin: convert_to_gguf is not supported");
  }
};

}  // namespace

#ifdef HOSTLM_TESTPLUGIN_ABI_OVERRIDE
// The wrong-ABI twin: the host must refuse it on the version alone. Calling the factory
// of a plugin built for another ABI is the very thing the check prevents, so doing it
// here ends the process loudly instead of passing quietly.
extern "C" __attribute__((visibility("default"))) int hostlm_plugin_abi_version() {
  return HOSTLM_TESTPLUGIN_ABI_OVERRIDE;
}
extern "C" __attribute__((visibility("default"))) hostlm::ArchitecturePlugin*
hostlm_plugin_create() {
  std::fputs("hostlm test plugin: create called despite an ABI mismatch\n", stderr);
  std::abort();
}
#else
HOSTLM_DECLARE_PLUGIN(TestPlugin)
#endif
