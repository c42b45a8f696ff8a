// Splits what Qwen3.5 generates into reasoning, content and tool calls, as it streams.
//
// Expected after a thinking prompt: `{reasoning}\n</think>\n\n{content}` and then zero or more
// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
// Tolerated, because released models do it (spec pitfall 24): a repeated `<think>` at the
// start, `<tool_call>` without `</think>` before it, `<function=` without `<tool_call>` (only
// when the request declared tools, so that prose about the format stays prose), a missing
// `</parameter>`, and a missing `</tool_call>` when generation ends after `</function>`.
//
// Whitespace: reasoning and content are trimmed at both ends, and the whitespace around a tool
// call collapses to the whitespace before it. Trailing whitespace is therefore held back until
// text follows it, as is anything that may be the start of a tag or of a UTF-8 character; the
// events then add up to the same result however the text was chunked.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "qwen35_chat.h"

namespace hostlm::qwen35 {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return r;
}

// Bytes at the end of `s` that start a UTF-8 sequence not yet complete.
size_t incomplete_utf8_tail(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

// JSON-schema types of each tool's parameters, which decide how a value is read.
class ArgumentTypes {
 public:
  explicit ArgumentTypes(const std::vector<ToolDefinition>& tools) {
    for (const ToolDefinition& tool : tools) {
      const Json& fn = tool.is_object() && tool.contains("function") ? tool["function"] : tool;
      if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) continue;
      auto& params = types_[fn["name"].get<std::string>()];
      const Json* props = nullptr;
      if (fn.contains("parameters") && fn["parameters"].is_object() &&
          fn["parameters"].contains("properties"))
        props = &fn["parameters"]["properties"];
      if (!props || !props->is_object()) continue;
      for (const auto& [name, schema] : props->items()) collect(schema, params[name]);
    }
  }

  // Empty when the tool or the parameter is unknown.
  const std::set<std::string>& of(const std::string& tool, const std::string& param) const {
    static const std::set<std::string> kNone;
    const auto t = types_.find(tool);
    if (t == types_.end()) return kNone;
    const auto p = t->second.find(param);
    return p == t->second.end() ? kNone : p->second;
  }

 private:
  static void collect(const Json& schema, std::set<std::string>& out) {
    if (!schema.is_object()) return;
    if (schema.contains("type")) {
      const Json& t = schema["type"];
      if (t.is_string()) out.insert(t.get<std::string>());
      if (t.is_array())
        for (const Json& e : t)
          if (e.is_string()) out.insert(e.get<std::string>());
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (schema.contains(key) && schema[key].is_array())
        for (const Json& alt : schema[key]) collect(alt, out);
  }

  std::map<std::string, std::map<std::string, std::set<std::string>>> types_;
};

// A string unless the schema says the parameter is something else and the text reads as it.
Json read_argument(std::string_view text, const std::set<std::string>& types) {
  if (types.empty()) return std::string(text);
  const bool can_be_string = types.count("string") > 0;
  const std::string word = lower(trim(text));
  if (word == "null" && (!can_be_string || types.count("null"))) return nullptr;
  if (can_be_string) return std::string(text);
  if (types.count("boolean") && (word == "true" || word == "false")) return word == "true";
  Json parsed = Json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return std::string(text);
}

// Reads the `<function=…>` blocks of one tool-call body. Nothing when there is no function
// with a name in it: the caller then shows the text as it was.
std::optional<std::vector<ToolCall>> read_calls(std::string_view body, const ArgumentTypes& types) {
  std::vector<ToolCall> calls;
  size_t pos = 0;
  while ((pos = body.find(kFunctionOpen, pos)) != std::string_view::npos) {
    const size_t name_end = body.find('>', pos);
    if (name_end == std::string_view::npos) return std::nullopt;
    ToolCall call;
    call.name =
        trim(body.substr(pos + kFunctionOpen.size(), name_end - pos - kFunctionOpen.size()));
    if (call.name.empty()) return std::nullopt;
    const size_t end = std::min(body.find(kFunctionClose, name_end), body.size());
    const std::string_view inner = body.substr(name_end + 1, end - name_end - 1);
    size_t p = 0;
    while ((p = inner.find(kParameterOpen, p)) != std::string_view::npos) {
      const size_t key_end = inner.find('>', p);
      if (key_end == std::string_view::npos) break;
      const std::string key(
          trim(inner.substr(p + kParameterOpen.size(), key_end - p - kParameterOpen.size())));
      size_t value_end = inner.find(kParameterClose, key_end);
      size_t next = value_end;
      if (value_end == std::string_view::npos) {  // unclosed: the value runs to the next one
        value_end = next = std::min(inner.find(kParameterOpen, key_end), inner.size());
      } else {
        next += kParameterClose.size();
      }
      std::string_view value = inner.substr(key_end + 1, value_end - key_end - 1);
      if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
      if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
      call.arguments[key] = read_argument(value, types.of(call.name, key));
      p = next;
    }
    calls.push_back(std::move(call));
    pos = end;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// One output channel (reasoning or content) with the whitespace rules of the file comment.
class Channel {
 public:
  explicit Channel(ChatEvent::Kind kind) : kind_(kind) {}

  void write(std::string_view text, std::vector<ChatEvent>& events) {
    size_t begin = 0;
    while (begin < text.size() && is_space(text[begin])) ++begin;
    if (begin == text.size()) {
      if (started_ && !after_call_) pending_ += text;
      return;
    }
    size_t end = text.size();
    while (is_space(text[end - 1])) --end;
    std::string piece;
    if (started_) piece = std::move(pending_);
    if (started_ && !after_call_) piece += text.substr(0, begin);
    piece += text.substr(begin, end - begin);
    pending_ = text.substr(end);
    started_ = true;
    after_call_ = false;
    if (!events.empty() && events.back().kind == kind_) {
      events.back().text += piece;
    } else {
      events.push_back({kind_, std::move(piece), {}});
    }
  }

  // Whitespace right after a tool call is dropped; the whitespace before it stays pending.
  void tool_call_ended() { after_call_ = true; }

 private:
  ChatEvent::Kind kind_;
  bool started_ = false;
  bool after_call_ = false;
  std::string pending_;  // trailing whitespace, emitted only if more text follows
};

class Qwen35Parser final : public ChatParser {
 public:
  Qwen35Parser(const std::vector<ToolDefinition>& tools, bool starts_in_reasoning)
      : types_(tools),
        implicit_calls_(!tools.empty()),
        state_(starts_in_reasoning ? State::kReasoning : State::kContent),
        may_repeat_think_(starts_in_reasoning) {}

  std::vector<ChatEvent> feed(std::string_view text) override {
    std::vector<ChatEvent> events;
    buffer_ += text;
    run(false, events);
    return events;
  }

  std::vector<ChatEvent> finish() override {
    std::vector<ChatEvent> events;
    run(true, events);
    return events;
  }

 private:
  enum class State { kReasoning, kContent, kToolCall };

  struct Found {
    size_t pos = std::string::npos;
    std::string_view tag;
  };

  Channel& channel() { return state_ == State::kReasoning ? reasoning_ : content_; }

  // The tags that end the current run of reasoning or content.
  std::vector<std::string_view> stop_tags() const {
    if (state_ == State::kReasoning) return {kThinkClose, kToolCallOpen};
    if (implicit_calls_) return {kToolCallOpen, kFunctionOpen};
    return {kToolCallOpen};
  }

  Found earliest(const std::vector<std::string_view>& tags) const {
    Found found;
    for (std::string_view tag : tags) {
      const size_t pos = buffer_.find(tag);
      if (pos < found.pos) found = {pos, tag};
    }
    return found;
  }

  // Bytes at the end of the buffer that may still become one of `tags`. Every tag has its
  // only '<' in front, so only the last '<' can start one.
  size_t possible_tag_tail(const std::vector<std::string_view>& tags) const {
    const size_t lt = buffer_.rfind('<');
    if (lt == std::string::npos) return 0;
    const std::string_view tail = std::string_view(buffer_).substr(lt);
    for (std::string_view tag : tags)
      if (tail.size() < tag.size() && tag.substr(0, tail.size()) == tail) return tail.size();
    return 0;
  }

  // Drops an optional tag (after whitespace) at the start of a run. False: wait for more text.
  bool skip_optional(std::string_view tag, bool final) {
    const size_t begin = buffer_.find_first_not_of(" \n\t\r\f\v");
    if (begin == std::string::npos) {
      if (final) buffer_.clear();
      return final;
    }
    const std::string_view rest = std::string_view(buffer_).substr(begin);
    if (rest.substr(0, tag.size()) == tag) {
      buffer_.erase(0, begin + tag.size());
    } else if (rest.size() < tag.size() && tag.substr(0, rest.size()) == rest && !final) {
      return false;
    }
    return true;
  }

  void run(bool final, std::vector<ChatEvent>& events) {
    while (true) {
      if (state_ == State::kToolCall) {
        if (!run_tool_call(final, events)) return;
        continue;
      }
      if (may_repeat_think_ || may_close_call_) {
        if (!skip_optional(may_repeat_think_ ? kThinkOpen : kToolCallClose, final)) return;
        may_repeat_think_ = may_close_call_ = false;
      }
      const auto tags = stop_tags();
      const Found found = earliest(tags);
      if (found.pos == std::string::npos) {
        size_t keep = final ? 0 : possible_tag_tail(tags);
        if (!final)
          keep += incomplete_utf8_tail(std::string_view(buffer_).substr(0, buffer_.size() - keep));
        channel().write(std::string_view(buffer_).substr(0, buffer_.size() - keep), events);
        buffer_.erase(0, buffer_.size() - keep);
        return;
      }
      channel().write(std::string_view(buffer_).substr(0, found.pos), events);
      if (found.tag == kThinkClose) {
        buffer_.erase(0, found.pos + found.tag.size());
        state_ = State::kContent;
        continue;
      }
      // A tool call: the body keeps `<function=` when the model left out `<tool_call>`.
      implicit_call_ = found.tag == kFunctionOpen;
      buffer_.erase(0, found.pos + (implicit_call_ ? 0 : found.tag.size()));
      state_ = State::kToolCall;
      scanned_ = 0;
    }
  }

  // False: the call is not complete yet.
  bool run_tool_call(bool final, std::vector<ChatEvent>& events) {
    const std::string_view close = implicit_call_ ? kFunctionClose : kToolCallClose;
    const size_t end = buffer_.find(close, scanned_);
    if (end == std::string::npos && !final) {
      scanned_ = buffer_.size() >= close.size() ? buffer_.size() - close.size() + 1 : 0;
      return false;
    }
    std::string body;
    std::string raw = implicit_call_ ? "" : std::string(kToolCallOpen);
    if (end != std::string::npos) {
      body = buffer_.substr(0, end + (implicit_call_ ? close.size() : 0));
      raw += buffer_.substr(0, end + close.size());
      buffer_.erase(0, end + close.size());
    } else {
      // Generation stopped inside the call: keep it only if a function was closed.
      const size_t last = buffer_.rfind(kFunctionClose);
      if (last != std::string::npos) body = buffer_.substr(0, last + kFunctionClose.size());
      raw += buffer_;
      buffer_.clear();
    }
    state_ = State::kContent;
    if (auto calls = read_calls(body, types_)) {
      for (ToolCall& call : *calls)
        events.push_back({ChatEvent::Kind::kToolCall, {}, std::move(call)});
      content_.tool_call_ended();
      may_close_call_ = implicit_call_;
    } else {
      content_.write(raw, events);
    }
    return true;
  }

  ArgumentTypes types_;
  bool implicit_calls_;  // accept `<function=` without `<tool_call>` (only when tools exist)
  State state_;
  bool may_repeat_think_;        // at the start of reasoning
  bool may_close_call_ = false;  // after a call opened by `<function=`: a stray `</tool_call>`
  bool implicit_call_ = false;
  size_t scanned_ = 0;  // buffer bytes already searched for the end of the call
  std::string buffer_;  // text not yet turned into events
  Channel reasoning_{ChatEvent::Kind::kReasoning};
  Channel content_{ChatEvent::Kind::kContent};
};

}  // namespace

std::unique_ptr<ChatParser> Qwen35ChatFormat::new_parser(const std::vector<ToolDefinition>& tools,
                                                         const ChatRenderOptions& options) const {
  return std::make_unique<Qwen35Parser>(tools,
                                        options.add_generation_prompt && thinking_enabled(options));
}

}  // namespace hostlm::qwen35
