// Text generation for `hostlm run`: a conversation rendered by the model's chat format,
// tokenized so that user text cannot smuggle in control tokens, generated token by token and
// printed as it is decoded, with reasoning dimmed or hidden.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/model_loader.h"
#include "hostlm/sampler.h"
#include "hostlm/tokenizer.h"
#include "model/chat_prompt.h"

namespace hostlm::cli {

// Prompt tokenization lives in the library so the C API tokenizes exactly as the CLI does.
using hostlm::tokenize_chat_prompt;

// A message of plain text, as typed at the prompt.
inline ChatMessage text_message(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

struct GenerationSettings {
  SamplerParams sampling;
  int num_predict = -1;  // <0: until an end token or the context is full
  bool hide_thinking = false;
  bool verbose = false;  // prompt ids and timings on stderr
  // Keeps every answer inside a grammar; samplers made for the chat take it on.
  GrammarConstraint constraint;
};

// One model with its chat state: the sequence evaluated so far, kept across turns so that a
// prompt extending it only evaluates what is new.
class ChatEngine {
 public:
  ChatEngine(Model& model, const Tokenizer& tokenizer, const ChatFormat& format,
             int64_t context_size);

  // Renders `conversation` with the generation prompt, generates the answer and prints it to
  // stdout as it comes. Returns the parsed answer.
  ChatOutput respond(const Conversation& conversation, const ChatRenderOptions& options,
                     const GenerationSettings& settings, Sampler& sampler);

  // Forgets the evaluated tokens (the next answer starts a fresh sequence).
  void reset();

 private:
  bool is_end_of_generation(int32_t id) const;

  Model& model_;
  const Tokenizer& tokenizer_;
  const ChatFormat& format_;
  int64_t context_size_;
  std::vector<int32_t> end_ids_;
  std::unique_ptr<Sequence> seq_;
  std::vector<int32_t> evaluated_;  // the tokens in seq_, in order
  std::vector<float> logits_;
};

struct InteractiveSettings {
  GenerationSettings generation;
  Thinking thinking = Thinking::kDefault;
  std::string system;
};

// Reads stdin line by line until /bye or end of input, keeping the conversation's history.
void run_interactive_chat(ChatEngine& engine, InteractiveSettings settings);

}  // namespace hostlm::cli
