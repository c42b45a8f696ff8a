// libFuzzer target for the Qwen3.5 chat format end to end: a client's conversation rendered
// into the prompt, the grammar that forces its tool calls, and the parser of what the model
// writes back, which sees arbitrary text (a model with random weights, or one pushed off its
// format, writes anything, and the parser runs inside the server's generation loop).
//
// Input: an OpenAI /v1/chat/completions body, a NUL byte, then the model's output. The body is
// read as the server reads it; when it is no valid request the output is still parsed with no
// tools. Checks beyond ASan and UBSan: render() and tool_call_grammar() fail only with a
// hostlm::Error; a grammar the format writes compiles; the parser throws nothing, whatever the
// text, and its events add up to the same reasoning, content and calls however the text is
// split into pieces. (Its text may hold invalid UTF-8 where the model wrote it; the server's
// JSON writers replace that, as Go's encoder does for Ollama.)
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/chat.h"
#include "hostlm/error.h"
#include "hostlm/grammar.h"
#include "hostlm/http/server.h"
#include "hostlm/json_input.h"
#include "hostlm/openai/requests.h"
#include "qwen35_chat.h"

namespace {

// What a generation's events add up to, tool calls as text so that outputs compare exactly.
struct Summary {
  std::string reasoning, content, calls;
  bool operator==(const Summary&) const = default;
};

void add(Summary& sum, const std::vector<hostlm::ChatEvent>& events) {
  hostlm::ChatOutput out;
  for (const hostlm::ChatEvent& e : events) out.add(e);
  sum.reasoning += out.reasoning;
  sum.content += out.content;
  for (const hostlm::ToolCall& call : out.tool_calls)
    sum.calls += call.name + " " +
                 call.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                 "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view body_text = input.substr(0, nul);
  const std::string_view output = nul == std::string_view::npos ? "" : input.substr(nul + 1);

  hostlm::Conversation conversation;
  hostlm::ChatRenderOptions options;
  bool parallel = true;
  std::string only_function;
  try {
    const auto call = hostlm::openai::parse_chat_completion(hostlm::parse_input_json(body_text));
    conversation = call.request.chat.value_or(hostlm::Conversation{});
    options.thinking = call.request.think;
    parallel = call.request.parallel_tool_calls;
    if (call.request.tool_choice.kind == hostlm::ToolChoice::Kind::kFunction)
      only_function = call.request.tool_choice.function;
  } catch (const std::exception&) {
    // Not a request the server would take (fuzz_api_requests checks how it refuses).
  }

  const hostlm::qwen35::Qwen35ChatFormat format(body_text.size() % 2 == 0);
  try {
    (void)format.render(conversation, options);
  } catch (const hostlm::Error&) {
  }
  if (!conversation.tools.empty()) {
    std::string gbnf;
    try {
      gbnf = format.tool_call_grammar(conversation.tools, only_function, parallel);
    } catch (const hostlm::Error&) {
      // A parameter schema the grammar cannot express is the client's 400.
    }
    if (!gbnf.empty()) (void)hostlm::Grammar::from_gbnf(gbnf);  // must compile: ours
  }

  // The output whole, then in pieces whose sizes the output's own bytes pick (1-16 bytes), so
  // that splits land inside tags and inside UTF-8 characters: the parser promises the same
  // result however the text arrives.
  Summary whole, pieces;
  {
    const auto parser = format.new_parser(conversation.tools, options);
    add(whole, parser->feed(output));
    add(whole, parser->finish());
  }
  const auto parser = format.new_parser(conversation.tools, options);
  size_t at = 0;
  while (at < output.size()) {
    const size_t piece = 1 + static_cast<unsigned char>(output[at]) % 16;
    add(pieces, parser->feed(output.substr(at, piece)));
    at += piece;
  }
  add(pieces, parser->finish());
  if (!(whole == pieces)) std::abort();
  return 0;
}
