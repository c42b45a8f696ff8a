// libFuzzer target for Ollama TEMPLATEs (adapters/ollama's Go text/template subset), which
// reach the server in Modelfiles and /api/create. Every input either parses or fails with
// RequestError (a 400); a parsed template either renders a small chat or fails with
// hostlm::Error naming the template. No other exception, no crash, no hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hostlm/error.h"
#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/go_template.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "thinking": "add",
     "tool_calls": [{"function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
    {"role": "tool", "content": "4", "tool_name": "add"},
    {"role": "user", "content": "Thanks"}])");
  return m;
}

const nlohmann::ordered_json& tools() {
  static const auto t = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "add", "description": "Adds",
     "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])");
  return t;
}

void render(const hostlm::ollama::GoTemplate& t) {
  try {
    (void)t.render_chat(messages(), tools(), true);
  } catch (const hostlm::Error& e) {
    check(std::string_view(e.what()).starts_with("template: "));
  }
  try {
    (void)t.render_generate("Hello", "world");
  } catch (const hostlm::Error& e) {
    check(std::string_view(e.what()).starts_with("template: "));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto t = hostlm::ollama::GoTemplate::parse(text);
    render(t);
  } catch (const hostlm::ollama::RequestError& e) {
    check(e.http_status() == 400);
    check(std::string_view(e.what()).starts_with("template: "));
  }
  return 0;
}
