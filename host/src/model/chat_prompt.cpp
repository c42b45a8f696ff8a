#include "model/chat_prompt.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "hostlm/error.h"

namespace hostlm {
namespace {

// ---- Prompt tokenization -------------------------------------------------------------------

struct SpecialToken {
  std::string_view text;
  int32_t id;
};

// Special tokens, longest first so that the first match at a position is the longest, as
// the tokenizer matches them.
class SpecialTokens {
 public:
  explicit SpecialTokens(const Tokenizer& tokenizer) {
    for (const AddedToken& t : tokenizer.spec().added_tokens) {
      if (!t.special || t.content.empty()) continue;
      tokens_.push_back({t.content, t.id});
      starts_[static_cast<unsigned char>(t.content[0])] = true;
    }
    std::stable_sort(tokens_.begin(), tokens_.end(),
                     [](const auto& a, const auto& b) { return a.text.size() > b.text.size(); });
  }

  const SpecialToken* match(std::string_view text, size_t pos) const {
    if (!starts_[static_cast<unsigned char>(text[pos])]) return nullptr;
    for (const SpecialToken& t : tokens_)
      if (text.substr(pos).starts_with(t.text)) return &t;
    return nullptr;
  }

  // A same-length copy of `text` in which no special token can be found: the first byte of
  // each occurrence becomes \x01, which no token starts with and no strip() removes, so a
  // format lays the copy out exactly as the original.
  bool defuse(std::string& text) const {
    bool changed = false;
    for (size_t pos = 0; pos < text.size();) {
      if (const SpecialToken* t = match(text, pos)) {
        text[pos] = '\x01';
        pos += t->text.size();
        changed = true;
      } else {
        ++pos;
      }
    }
    return changed;
  }

  bool defuse(nlohmann::ordered_json& value) const {
    bool changed = false;
    if (value.is_string()) {
      changed = defuse(value.get_ref<std::string&>());
    } else if (value.is_structured()) {
      for (auto& item : value) changed = defuse(item) || changed;
    }
    return changed;
  }

 private:
  std::vector<SpecialToken> tokens_;
  std::array<bool, 256> starts_{};
};

// Every text in the conversation comes from the user or from an earlier generation.
bool defuse(Conversation& conversation, const SpecialTokens& specials) {
  bool changed = false;
  for (ChatMessage& m : conversation.messages) {
    changed = specials.defuse(m.content) || changed;
    if (m.reasoning_content) changed = specials.defuse(*m.reasoning_content) || changed;
    changed = specials.defuse(m.tool_call_id) || changed;
    changed = specials.defuse(m.name) || changed;
    for (ToolCall& call : m.tool_calls) {
      changed = specials.defuse(call.id) || changed;
      changed = specials.defuse(call.name) || changed;
      changed = specials.defuse(call.arguments) || changed;
    }
  }
  for (ToolDefinition& tool : conversation.tools) changed = specials.defuse(tool) || changed;
  return changed;
}

}  // namespace

std::vector<int32_t> tokenize_chat_prompt(const Tokenizer& tokenizer, const ChatFormat& format,
                                          const Conversation& conversation,
                                          const ChatRenderOptions& options) {
  const std::string prompt = format.render(conversation, options);
  const SpecialTokens specials(tokenizer);
  Conversation defused = conversation;
  if (!defuse(defused, specials)) return tokenizer.encode(prompt);

  // Render again with the messages' special-token text defused: the special tokens left in
  // that copy are the format's own, and the text between them is tokenized as plain text.
  const std::string layout = format.render(defused, options);
  if (layout.size() != prompt.size())
    throw Error(
        "cannot tokenize the prompt safely: special-token text in a message changed how the "
        "chat format laid it out");
  std::vector<int32_t> ids;
  if (tokenizer.spec().add_bos && tokenizer.bos_id()) ids.push_back(*tokenizer.bos_id());
  const Tokenizer::EncodeOptions plain{.parse_special = false, .add_special_tokens = false};
  auto add_text = [&](size_t from, size_t to) {
    if (from == to) return;
    const auto part = tokenizer.encode(std::string_view(prompt).substr(from, to - from), plain);
    ids.insert(ids.end(), part.begin(), part.end());
  };
  size_t text_start = 0;
  for (size_t pos = 0; pos < layout.size();) {
    const SpecialToken* t = specials.match(layout, pos);
    if (!t) {
      ++pos;
      continue;
    }
    add_text(text_start, pos);
    ids.push_back(t->id);
    pos += t->text.size();
    text_start = pos;
  }
  add_text(text_start, prompt.size());
  return ids;
}

std::vector<int64_t> chat_reuse_points(const Tokenizer& tokenizer, const ChatFormat& format,
                                       const Conversation& conversation,
                                       const ChatRenderOptions& options,
                                       std::span<const int32_t> prompt) {
  ChatRenderOptions history = options;
  history.add_generation_prompt = false;
  std::vector<int64_t> points;
  for (const char* follow_up : {"user", "tool"}) {
    Conversation next = conversation;
    for (const char* role : {"assistant", follow_up}) {
      ChatMessage m;
      m.role = role;
      m.content = "x";  // any text: only where the messages start matters
      next.messages.push_back(m);
    }
    std::vector<int32_t> ids;
    try {
      ids = tokenize_chat_prompt(tokenizer, format, next, history);
    } catch (const Error&) {
      continue;  // a format that refuses this follow-up has no point for it
    }
    const auto diverge = std::mismatch(prompt.begin(), prompt.end(), ids.begin(), ids.end());
    const int64_t shared = static_cast<int64_t>(diverge.first - prompt.begin());
    if (shared < static_cast<int64_t>(prompt.size())) points.push_back(shared);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

int64_t chat_reuse_point(const Tokenizer& tokenizer, const ChatFormat& format,
                         const Conversation& conversation, const ChatRenderOptions& options,
                         std::span<const int32_t> prompt) {
  const auto points = chat_reuse_points(tokenizer, format, conversation, options, prompt);
  return points.empty() ? 0 : points.front();
}

std::vector<int32_t> end_of_generation_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  if (const auto eos = tokenizer.eos_id()) ids.push_back(*eos);
  for (const char* name : {"<|im_end|>", "<|endoftext|>"})
    if (const auto id = tokenizer.token_id(name); id && tokenizer.is_special(*id))
      ids.push_back(*id);
  return ids;
}

}  // namespace hostlm
