#include "text_chat.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "hostlm/error.h"

namespace hostlm::cli {
namespace {

// ---- Output --------------------------------------------------------------------------------

void out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Prints parsed events as they arrive: reasoning faint on a terminal (plain in a pipe, where
// escape codes would be noise) and set apart from the answer by a blank line.
class AnswerPrinter {
 public:
  explicit AnswerPrinter(bool hide_thinking)
      : faint_(::isatty(STDOUT_FILENO) != 0), hide_thinking_(hide_thinking) {}

  void print(const ChatEvent& event) {
    switch (event.kind) {
      case ChatEvent::Kind::kReasoning:
        if (hide_thinking_ || event.text.empty()) return;
        if (!in_reasoning_ && faint_) out("\x1b[2m");
        in_reasoning_ = true;
        write(event.text);
        return;
      case ChatEvent::Kind::kContent:
        if (event.text.empty()) return;
        close_reasoning();
        write(event.text);
        return;
      case ChatEvent::Kind::kToolCall:
        close_reasoning();
        if (last_ != '\n' && last_ != 0) write("\n");
        write("[tool call] " + event.tool_call.name + " " + event.tool_call.arguments.dump() +
              "\n");
        return;
    }
  }

  void finish() {
    if (in_reasoning_ && faint_) out("\x1b[0m");
    in_reasoning_ = false;
    if (last_ != 0 && last_ != '\n') write("\n");
  }

 private:
  void close_reasoning() {
    if (!in_reasoning_) return;
    if (faint_) out("\x1b[0m");
    in_reasoning_ = false;
    write("\n\n");
  }
  void write(std::string_view text) {
    if (text.empty()) return;
    out(text);
    last_ = text.back();
  }

  bool faint_, hide_thinking_;
  bool in_reasoning_ = false;
  char last_ = 0;  // 0: nothing printed yet
};

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

ChatEngine::ChatEngine(Model& model, const Tokenizer& tokenizer, const ChatFormat& format,
                       int64_t context_size)
    : model_(model),
      tokenizer_(tokenizer),
      format_(format),
      context_size_(context_size),
      logits_(static_cast<size_t>(model.info().n_vocab)) {
  end_ids_ = end_of_generation_ids(tokenizer);
}

bool ChatEngine::is_end_of_generation(int32_t id) const {
  return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

void ChatEngine::reset() {
  seq_.reset();
  evaluated_.clear();
}

ChatOutput ChatEngine::respond(const Conversation& conversation, const ChatRenderOptions& options,
                               const GenerationSettings& settings, Sampler& sampler) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> prompt =
      tokenize_chat_prompt(tokenizer_, format_, conversation, options);
  if (static_cast<int64_t>(prompt.size()) >= context_size_)
    throw Error("the prompt is " + std::to_string(prompt.size()) +
                " tokens, more than the context of " + std::to_string(context_size_) +
                " holds (see --ctx-size, or /clear the history)");
  // The sequence only grows, so it can serve a prompt that extends it and nothing else.
  const bool reuse = seq_ && prompt.size() > evaluated_.size() &&
                     std::equal(evaluated_.begin(), evaluated_.end(), prompt.begin());
  if (!reuse) {
    seq_.reset();  // free the old state before allocating the new one
    seq_ = model_.new_sequence(context_size_);
    evaluated_.clear();
  }
  const size_t reused = evaluated_.size();
  const std::span<const int32_t> suffix = std::span(prompt).subspan(reused);
  model_.eval(*seq_, suffix, false, logits_);
  evaluated_.insert(evaluated_.end(), suffix.begin(), suffix.end());
  const auto t1 = std::chrono::steady_clock::now();
  if (settings.verbose) {
    std::string ids;
    for (size_t i = 0; i < prompt.size(); ++i) ids += (i ? "," : "") + std::to_string(prompt[i]);
    std::fprintf(stderr, "prompt: %zu tokens, %zu reused: [%s]\n", prompt.size(), reused,
                 ids.c_str());
  }

  sampler.clear_history();
  sampler.accept(prompt);
  sampler.restart_constraint();  // each answer is a sentence of the grammar on its own
  StreamingDecoder decoder(tokenizer_);
  const auto parser = format_.new_parser(conversation.tools, options);
  AnswerPrinter printer(settings.hide_thinking);
  ChatOutput answer;
  auto emit = [&](const std::vector<ChatEvent>& events) {
    for (const ChatEvent& e : events) {
      answer.add(e);
      printer.print(e);
    }
  };
  int generated = 0;
  bool context_full = false;
  while (settings.num_predict < 0 || generated < settings.num_predict) {
    const int32_t next = sampler.sample(logits_);
    if (is_end_of_generation(next)) break;
    ++generated;
    emit(parser->feed(decoder.push(next)));
    if (settings.num_predict >= 0 && generated >= settings.num_predict) break;
    if (seq_->n_past() >= seq_->capacity()) {
      context_full = true;
      break;
    }
    model_.eval(*seq_, std::span<const int32_t>(&next, 1), false, logits_);
    evaluated_.push_back(next);
  }
  emit(parser->feed(decoder.finish()));
  emit(parser->finish());
  printer.finish();
  const auto t2 = std::chrono::steady_clock::now();
  if (context_full)
    std::fprintf(stderr, "hostlm: the context of %lld tokens is full (see --ctx-size)\n",
                 static_cast<long long>(context_size_));
  if (settings.verbose)
    std::fprintf(stderr, "prompt %.1f ms, generated %d tokens %.1f ms (%.1f tokens/s)\n",
                 ms_between(t0, t1), generated, ms_between(t1, t2),
                 generated / std::max(ms_between(t1, t2) / 1000.0, 1e-9));
  return answer;
}

// ---- Interactive chat ----------------------------------------------------------------------

namespace {

constexpr const char* kHelp =
    "Commands:\n"
    "  /set think              think before answering\n"
    "  /set nothink            answer without thinking\n"
    "  /set system TEXT        use TEXT as the system message\n"
    "  /set parameter NAME V   temperature, top_k, top_p, min_p, repeat_penalty,\n"
    "                          repeat_last_n, seed, num_predict\n"
    "  /clear                  forget the conversation\n"
    "  /bye                    leave (or Ctrl-D)\n"
    "  /?                      this help\n"
    "Begin and end a message with \"\"\" to write several lines.\n";

void note(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

template <typename T>
bool parse_number(std::string_view text, T& value) {
  try {
    size_t used = 0;
    const std::string s(text);
    if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(std::stod(s, &used));
    } else if constexpr (std::is_unsigned_v<T>) {
      if (s.starts_with('-')) return false;
      const unsigned long long v = std::stoull(s, &used);
      if (v > std::numeric_limits<T>::max()) return false;
      value = static_cast<T>(v);
    } else {
      const long long v = std::stoll(s, &used);
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
      value = static_cast<T>(v);
    }
    return used == s.size() && !s.empty();
  } catch (const std::exception&) {
    return false;
  }
}

// "/set parameter NAME VALUE": changes `settings` only when the value is valid.
void set_parameter(std::string_view name, std::string_view value, InteractiveSettings& settings,
                   std::unique_ptr<Sampler>& sampler) {
  SamplerParams p = settings.generation.sampling;
  int num_predict = settings.generation.num_predict;
  bool ok = false;
  if (name == "temperature") {
    ok = parse_number(value, p.temperature);
  } else if (name == "top_k") {
    ok = parse_number(value, p.top_k) && p.top_k >= 0;
  } else if (name == "top_p") {
    ok = parse_number(value, p.top_p) && p.top_p >= 0.f && p.top_p <= 1.f;
  } else if (name == "min_p") {
    ok = parse_number(value, p.min_p);
  } else if (name == "repeat_penalty") {
    ok = parse_number(value, p.repeat_penalty);
  } else if (name == "repeat_last_n") {
    ok = parse_number(value, p.repeat_last_n);
  } else if (name == "seed") {
    ok = parse_number(value, p.seed);
  } else if (name == "num_predict") {
    ok = parse_number(value, num_predict);
  } else {
    note("Unknown parameter '" + std::string(name) + "'. Type /? for help.");
    return;
  }
  if (!ok) {
    note("Invalid value '" + std::string(value) + "' for " + std::string(name) + ".");
    return;
  }
  try {
    sampler = std::make_unique<Sampler>(p, settings.generation.constraint);
  } catch (const Error& e) {
    note(std::string("Invalid value: ") + e.what() + ".");
    return;
  }
  settings.generation.sampling = p;
  settings.generation.num_predict = num_predict;
  note("Set parameter '" + std::string(name) + "' to '" + std::string(value) + "'.");
}

// Returns false for /bye.
bool run_command(std::string_view line, InteractiveSettings& settings,
                 std::unique_ptr<Sampler>& sampler, std::vector<ChatMessage>& history,
                 ChatEngine& engine) {
  std::vector<std::string_view> words;
  for (size_t pos = 0; pos < line.size();) {
    const size_t start = line.find_first_not_of(' ', pos);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(line.find(' ', start), line.size());
    words.push_back(line.substr(start, end - start));
    pos = end;
  }
  const std::string_view cmd = words.empty() ? std::string_view() : words[0];
  if (cmd == "/bye" || cmd == "/exit") return false;
  if (cmd == "/?" || cmd == "/help") {
    std::fputs(kHelp, stderr);
  } else if (cmd == "/clear") {
    history.clear();
    engine.reset();
    note("Cleared the conversation.");
  } else if (cmd == "/set" && words.size() == 2 && words[1] == "think") {
    settings.thinking = Thinking::kOn;
    note("Set 'think' mode.");
  } else if (cmd == "/set" && words.size() == 2 && words[1] == "nothink") {
    settings.thinking = Thinking::kOff;
    note("Set 'nothink' mode.");
  } else if (cmd == "/set" && words.size() >= 2 && words[1] == "system") {
    // Everything after the word "system", spaces inside kept.
    const size_t at = line.find("system") + std::string_view("system").size();
    settings.system = std::string(trim(line.substr(at)));
    note(settings.system.empty() ? "Cleared the system message." : "Set system message.");
  } else if (cmd == "/set" && words.size() == 4 && words[1] == "parameter") {
    set_parameter(words[2], words[3], settings, sampler);
  } else if (cmd == "/set") {
    note("Usage: /set think | /set nothink | /set system TEXT | /set parameter NAME VALUE");
  } else {
    note("Unknown command '" + std::string(cmd) + "'. Type /? for help.");
  }
  return true;
}

}  // namespace

void run_interactive_chat(ChatEngine& engine, InteractiveSettings settings) {
  const bool at_terminal = ::isatty(STDIN_FILENO) != 0;
  auto sampler =
      std::make_unique<Sampler>(settings.generation.sampling, settings.generation.constraint);
  std::vector<ChatMessage> history;
  if (at_terminal) note("Type /? for help, /bye or Ctrl-D to leave.");
  auto read_line = [&](const char* prompt, std::string& line) {
    if (at_terminal) out(prompt);
    if (!std::getline(std::cin, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  std::string line;
  while (read_line(">>> ", line)) {
    std::string text;
    if (line.starts_with("\"\"\"")) {
      // Multi-line: everything up to a line ending in """, the quotes and the empty first and
      // last lines they may stand on left out.
      std::vector<std::string> lines;
      std::string part = line.substr(3);
      bool closed = part.size() >= 3 && part.ends_with("\"\"\"");
      if (closed) part.resize(part.size() - 3);
      if (!part.empty()) lines.push_back(part);
      while (!closed) {
        if (!read_line("... ", line)) return;  // end of input: the unfinished message is dropped
        closed = line.ends_with("\"\"\"");
        if (closed) line.resize(line.size() - 3);
        if (!closed || !line.empty()) lines.push_back(line);
      }
      for (size_t i = 0; i < lines.size(); ++i) text += (i ? "\n" : "") + lines[i];
    } else if (line.starts_with('/')) {
      if (!run_command(line, settings, sampler, history, engine)) return;
      continue;
    } else {
      text = line;
    }
    if (trim(text).empty()) continue;

    Conversation conversation;
    if (!settings.system.empty())
      conversation.messages.push_back(text_message("system", settings.system));
    conversation.messages.insert(conversation.messages.end(), history.begin(), history.end());
    conversation.messages.push_back(text_message("user", text));
    ChatRenderOptions options;
    options.thinking = settings.thinking;
    ChatOutput answer;
    try {
      answer = engine.respond(conversation, options, settings.generation, *sampler);
    } catch (const Error& e) {
      std::fprintf(stderr, "hostlm: %s\n", e.what());
      continue;
    }
    history.push_back(conversation.messages.back());
    ChatMessage reply;
    reply.role = "assistant";
    reply.content = std::move(answer.content);
    // Always set, even empty: absent would let the format look for <think> in the content.
    reply.reasoning_content = std::move(answer.reasoning);
    reply.tool_calls = std::move(answer.tool_calls);
    history.push_back(std::move(reply));
    if (at_terminal) out("\n");
  }
}

}  // namespace hostlm::cli
