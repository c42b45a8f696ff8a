// The prompt of ../shared/data/qwen35/chat_template.jinja as transformers renders it (Python
// jinja2, trim/lstrip blocks, tojson = json.dumps(ensure_ascii=False)), written out natively.
// Byte identity is the contract (tests/data/chat/qwen35_cases.json), so Python's semantics
// are reproduced where they matter: str.strip's idea of whitespace, json.dumps spacing and
// float repr, and str() of booleans and None inside tool-call arguments.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/safetensors.h"
#include "qwen35_chat.h"

namespace hostlm::qwen35 {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kToolsHeader =
    "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>";

// Fixed text of the template, byte for byte; the model was trained on exactly this.
constexpr std::string_view kToolInstructions =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>"
    "\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second "
    "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
    "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
    "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- "
    "Required parameters MUST be specified\n- You may provide optional reasoning for your "
    "function call in natural language BEFORE the function call, but NOT after\n- If there is no "
    "function call available, answer the question like normal with your current knowledge and "
    "do not tell the user about function calls\n</IMPORTANT>";

constexpr std::string_view kThinkingOffVariant =
    "enable_thinking is defined and enable_thinking is true";

[[noreturn]] void template_error(const std::string& message) {
  throw Error("Qwen3.5 chat template: " + message);
}

// ---- Python str.strip() ----------------------------------------------------------------

// The code points Python's str.isspace() accepts, which is what Jinja's trim strips.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// 0 for a byte that cannot start a sequence.
size_t utf8_sequence_length(unsigned char lead) {
  return lead < 0x80           ? 1
         : (lead >> 5) == 0x6  ? 2
         : (lead >> 4) == 0xE  ? 3
         : (lead >> 3) == 0x1E ? 4
                               : 0;
}

// Whether `s` is exactly one UTF-8 sequence for a space; invalid bytes are not spaces.
bool is_python_space(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  if (s.empty() || utf8_sequence_length(byte(0)) != s.size()) return false;
  char32_t c = s.size() == 1 ? byte(0) : byte(0) & (0x7F >> s.size());
  for (size_t i = 1; i < s.size(); ++i) {
    if ((byte(i) & 0xC0) != 0x80) return false;
    c = (c << 6) | (byte(i) & 0x3F);
  }
  return is_python_space(c);
}

std::string_view python_strip(std::string_view s) {
  while (!s.empty()) {
    const size_t len = std::clamp<size_t>(
        utf8_sequence_length(static_cast<unsigned char>(s.front())), 1, s.size());
    if (!is_python_space(s.substr(0, len))) break;
    s.remove_prefix(len);
  }
  while (!s.empty()) {
    size_t start = s.size() - 1;  // back over continuation bytes to the sequence's lead
    while (start > 0 && s.size() - start < 4 &&
           (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
      --start;
    if (!is_python_space(s.substr(start))) break;
    s.remove_suffix(s.size() - start);
  }
  return s;
}

std::string_view strip_newlines_left(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view strip_newlines_right(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// ---- Python json.dumps(ensure_ascii=False) and str() -----------------------------------

// float.__repr__: the shortest round-trip digits, positional for exponents -4..15.
void append_python_float(double v, bool json_spelling, std::string& out) {
  if (std::isnan(v)) {
    out += json_spelling ? "NaN" : "nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-" : "";
    out += json_spelling ? "Infinity" : "inf";
    return;
  }
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(res.ptr - buf));
  if (s.front() == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  const size_t e = s.find('e');
  std::string digits(s.substr(0, e));
  if (digits.size() > 1) digits.erase(1, 1);  // the '.'
  const int exponent = std::atoi(std::string(s.substr(e + 1)).c_str());
  const int point = exponent + 1;  // digits are 0.d1d2… × 10^point
  const int n = static_cast<int>(digits.size());
  if (point <= -4 || point > 16) {
    out += digits[0];
    if (n > 1) out.append(".").append(digits, 1);
    out += exponent < 0 ? "e-" : "e+";
    const int a = std::abs(exponent);
    if (a < 10) out += '0';
    out += std::to_string(a);
  } else if (point <= 0) {
    out.append("0.").append(static_cast<size_t>(-point), '0').append(digits);
  } else if (point < n) {
    out.append(digits, 0, static_cast<size_t>(point))
        .append(".")
        .append(digits, static_cast<size_t>(point));
  } else {
    out.append(digits).append(static_cast<size_t>(point - n), '0').append(".0");
  }
}

void append_json_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out.append("\\u00").append(1, kHex[c >> 4]).append(1, kHex[c & 0xF]);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void append_python_json(const Json& v, std::string& out) {
  switch (v.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_json_string(key, out);
        out += ": ";
        append_python_json(value, out);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_python_json(v[i], out);
      }
      out += ']';
      return;
    }
    case Json::value_t::string:
      append_json_string(v.get_ref<const std::string&>(), out);
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      append_python_float(v.get<double>(), true, out);
      return;
    default:  // null (binary and discarded values cannot come from JSON text)
      out += "null";
      return;
  }
}

// The template's `value | tojson` for objects and arrays, `value | string` otherwise.
void append_argument_value(const Json& v, std::string& out) {
  switch (v.type()) {
    case Json::value_t::object:
    case Json::value_t::array:
      append_python_json(v, out);
      return;
    case Json::value_t::string:
      out += v.get_ref<const std::string&>();
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "True" : "False";
      return;
    case Json::value_t::number_float:
      append_python_float(v.get<double>(), false, out);
      return;
    case Json::value_t::null:
      out += "None";
      return;
    default:  // integers
      append_python_json(v, out);
      return;
  }
}

// ---- The template, message by message -----------------------------------------------------

void render_system(const Conversation& conv, std::string& out) {
  const auto& first = conv.messages.front();
  const bool has_system = first.role == "system";
  const std::string_view system = has_system ? python_strip(first.content) : std::string_view();
  if (conv.tools.empty()) {
    if (has_system) out.append("<|im_start|>system\n").append(system).append("<|im_end|>\n");
    return;
  }
  out += kToolsHeader;
  for (const ToolDefinition& tool : conv.tools) {
    out += '\n';
    append_python_json(tool, out);
  }
  out += kToolInstructions;
  if (!system.empty()) out.append("\n\n").append(system);
  out += "<|im_end|>\n";
}

// The turn the model is answering: the last user message that is not just tool output
// wrapped by a client. Assistant turns after it keep their reasoning (pitfall 19).
size_t last_user_query(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role != "user") continue;
    const std::string_view content = python_strip(messages[i].content);
    if (!(content.starts_with("<tool_response>") && content.ends_with("</tool_response>")))
      return i;
  }
  template_error("No user query found in messages.");
}

void render_tool_calls(const ChatMessage& message, std::string_view content, size_t index,
                       std::string& out) {
  for (size_t i = 0; i < message.tool_calls.size(); ++i) {
    const ToolCall& call = message.tool_calls[i];
    if (i > 0) {
      out += '\n';
    } else if (!python_strip(content).empty()) {
      out += "\n\n";
    }
    out.append("<tool_call>\n<function=").append(call.name).append(">\n");
    if (!call.arguments.is_object()) {
      template_error("the arguments of tool call \"" + call.name + "\" in message " +
                     std::to_string(index) + " are not a JSON object");
    }
    for (const auto& [key, value] : call.arguments.items()) {
      out.append("<parameter=").append(key).append(">\n");
      append_argument_value(value, out);
      out += "\n</parameter>\n";
    }
    out += "</function>\n</tool_call>";
  }
}

void render_assistant(const ChatMessage& message, size_t index, bool keeps_reasoning,
                      std::string& out) {
  std::string_view content = python_strip(message.content);
  std::string_view reasoning;
  if (message.reasoning_content) {
    reasoning = *message.reasoning_content;
  } else if (const size_t first = content.find("</think>"); first != std::string_view::npos) {
    // Reasoning the client left inline: after the last <think> before the first </think>.
    std::string_view before = strip_newlines_right(content.substr(0, first));
    if (const size_t open = before.rfind("<think>"); open != std::string_view::npos)
      before.remove_prefix(open + std::string_view("<think>").size());
    reasoning = strip_newlines_left(before);
    content = strip_newlines_left(
        content.substr(content.rfind("</think>") + std::string_view("</think>").size()));
  }
  reasoning = python_strip(reasoning);
  out += "<|im_start|>assistant\n";
  if (keeps_reasoning) out.append("<think>\n").append(reasoning).append("\n</think>\n\n");
  out += content;
  render_tool_calls(message, content, index, out);
  out += "<|im_end|>\n";
}

}  // namespace

std::string Qwen35ChatFormat::render(const Conversation& conv,
                                     const ChatRenderOptions& options) const {
  const auto& messages = conv.messages;
  if (messages.empty()) template_error("No messages provided.");
  std::string out;
  render_system(conv, out);
  const size_t last_query = last_user_query(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      if (i != 0) {
        template_error("System message must be at the beginning. (message " + std::to_string(i) +
                       " has role \"system\")");
      }
    } else if (m.role == "user") {
      out.append("<|im_start|>user\n").append(python_strip(m.content)).append("<|im_end|>\n");
    } else if (m.role == "assistant") {
      render_assistant(m, i, i > last_query, out);
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn. A leading tool message opens none:
      // the template tests loop.previtem, which is undefined there.
      if (i > 0 && messages[i - 1].role != "tool") out += "<|im_start|>user";
      out.append("\n<tool_response>\n")
          .append(python_strip(m.content))
          .append("\n</tool_response>");
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    } else {
      template_error("Unexpected message role. (message " + std::to_string(i) + " has role \"" +
                     m.role + "\")");
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    out += thinking_enabled(options) ? "<think>\n" : "<think>\n\n</think>\n\n";
  }
  return out;
}

bool template_thinks_by_default(std::string_view chat_template) {
  return chat_template.find(kThinkingOffVariant) == std::string_view::npos;
}

namespace {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

// tokenizer_config.json holds the template as a string, or as a list of named templates.
std::string template_from_tokenizer_config(const std::filesystem::path& path) {
  const Json config = Json::parse(read_text_file(path), nullptr, false);
  if (!config.is_object() || !config.contains("chat_template")) return {};
  const Json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {
    for (const Json& named : t) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string())
        return named["template"].get<std::string>();
    }
  }
  return {};
}

std::string model_chat_template(const ModelFiles& files) {
  if (files.gguf) return files.gguf->get_string("tokenizer.chat_template").value_or("");
  if (files.hf) {
    const auto& folder = files.hf->folder();
    if (std::string t = read_text_file(folder / "chat_template.jinja"); !t.empty()) return t;
    return template_from_tokenizer_config(folder / "tokenizer_config.json");
  }
  return {};
}

}  // namespace

std::unique_ptr<ChatFormat> make_chat_format(const ModelFiles& files) {
  return std::make_unique<Qwen35ChatFormat>(template_thinks_by_default(model_chat_template(files)));
}

}  // namespace hostlm::qwen35
