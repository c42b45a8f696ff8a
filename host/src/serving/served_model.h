// A model loaded for serving: its files, tokenizer, chat format and engine, plus the
// prompt preparation every generation of it shares.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hostlm/engine.h"
#include "hostlm/grammar.h"
#include "hostlm/serving.h"

namespace hostlm {

// A request turned into what the engine needs.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  Conversation conversation;  // after defaults and truncation (chat requests)
  ChatRenderOptions render;
  bool chat = false;          // false: raw prompt, the answer is all content
  GenerationOptions options;  // every field set
  GrammarConstraint constraint;
  std::string text;  // the rendered prompt (chat) or the raw prompt
};

class ServedModel {
 public:
  // Loads under `registry_mutex` (the registry loads plugin libraries on first use).
  ServedModel(PluginRegistry& registry, std::mutex& registry_mutex, ModelSpec spec,
              const ServingOptions& options, int64_t context);
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  const ModelSpec& spec() const { return spec_; }
  const ModelInfo& info() const { return loaded_->model().info(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ChatFormat* format() const { return format_.get(); }
  int64_t context() const { return context_; }
  const std::vector<int32_t>& end_ids() const { return end_ids_; }
  const std::string& backend_name() const { return backend_name_; }
  uint64_t weights_size() const { return spec_.size; }
  Engine& engine() { return *engine_; }
  Model& model() { return loaded_->model(); }

  // Applies defaults, renders, tokenizes, truncates and builds the grammar constraint.
  // Throws InvalidRequest.
  PreparedPrompt prepare(const TextRequest& request);

 private:
  std::shared_ptr<const GrammarVocab> grammar_vocab();
  GrammarConstraint constraint_for(const TextRequest& request, const Conversation* chat,
                                   Thinking thinking);

  // Destroyed bottom-up: engine, format, tokenizer, then the model and its files.
  ModelSpec spec_;
  const ServingOptions options_;
  int64_t context_ = 0;
  std::unique_ptr<LoadedModel> loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatFormat> format_;
  std::unique_ptr<Engine> engine_;
  std::vector<int32_t> end_ids_;
  std::string backend_name_;
  std::mutex vocab_mutex_;
  std::shared_ptr<const GrammarVocab> vocab_;  // built on the first constrained request
};

}  // namespace hostlm
