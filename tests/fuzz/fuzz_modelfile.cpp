// libFuzzer target for the Modelfile parser and PARAMETER typing (adapters/ollama). Every input
// either parses or fails with RequestError, which the server answers with a 400: no other
// exception, no crash, no hang. A parse that succeeds must hold what callers rely on: command
// names from Ollama's set, 1-based lines inside the text, a FROM among the commands.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::array<std::string_view, 11> kCommands = {
    "from",     "license", "template",  "system",  "adapter", "draft",
    "renderer", "parser",  "parameter", "message", "requires"};

void parse(std::string_view text) {
  const auto newlines =
      std::count_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; });
  try {
    const hostlm::ollama::Modelfile modelfile = hostlm::ollama::parse_modelfile(text);
    bool has_from = false;
    for (const auto& command : modelfile.commands) {
      check(std::find(kCommands.begin(), kCommands.end(), command.name) != kCommands.end());
      check(command.line >= 1 && command.line <= newlines + 1);
      check(command.name == "parameter" || command.name == "message" || command.key.empty());
      has_from = has_from || command.name == "from";
    }
    check(has_from);
  } catch (const hostlm::ollama::RequestError& e) {
    check(e.http_status() == 400);
  }
}

// The first line as "<name> <value>", typed as a PARAMETER would be.
void type_parameter(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  const size_t space = line.find(' ');
  const std::string_view name = line.substr(0, space);
  const std::string_view value = space == std::string_view::npos ? "" : line.substr(space + 1);
  try {
    bool deprecated = false;
    const auto typed = hostlm::ollama::parse_parameter(name, value, &deprecated);
    // A deprecated parameter is accepted and dropped (null), as Ollama warns and ignores it.
    check(deprecated ? typed.is_null()
                     : typed.is_number() || typed.is_boolean() || typed.is_string());
  } catch (const hostlm::ollama::RequestError& e) {
    check(e.http_status() == 400);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  parse(text);
  type_parameter(text);
  return 0;
}
