// The grammar of Qwen3.5's tool calls, for requests that require one (tool_choice):
//
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//
// exactly as the template renders a call and the parser reads it back. Values follow the
// parameter's schema where the format allows: enum and const values literally, integers,
// numbers, booleans and null in JSON syntax, objects and arrays as JSON, strings as raw text
// (which cannot contain "</", so that the closing tag stays unambiguous).
#include <algorithm>
#include <string>
#include <vector>

#include "hostlm/grammar.h"
#include "qwen35_chat.h"

namespace hostlm::qwen35 {
namespace {

using Json = nlohmann::ordered_json;

const Json* function_of(const ToolDefinition& tool) {
  const Json& fn = tool.is_object() && tool.contains("function") ? tool["function"] : tool;
  if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string()) return nullptr;
  return &fn;
}

class ToolGrammarWriter {
 public:
  std::string add_rule(const std::string& body) {
    const std::string name = "tc" + std::to_string(next_++);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  // A GBNF expression for one argument value.
  std::string value(const Json& schema) const {
    if (!schema.is_object()) return "tc-text";
    if (const auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
      std::string alternatives;
      for (const Json& v : *e)
        alternatives += (alternatives.empty() ? "" : " | ") + literal_value(v);
      return "(" + alternatives + ")";
    }
    if (const auto c = schema.find("const"); c != schema.end()) return literal_value(*c);
    std::vector<std::string> types;
    if (const auto t = schema.find("type"); t != schema.end()) {
      if (t->is_string()) types.push_back(t->get<std::string>());
      if (t->is_array())
        for (const Json& item : *t)
          if (item.is_string()) types.push_back(item.get<std::string>());
    }
    if (types.empty()) return "tc-text";
    std::string alternatives;
    for (const std::string& type : types) {
      std::string expr = "tc-text";
      if (type == "string") {
        const auto max = schema.find("maxLength");
        if (max != schema.end() && max->is_number_unsigned())
          expr = "tc-char{0," + std::to_string(max->get<uint64_t>()) + "}";
      } else if (type == "integer") {
        expr = "json-int";
      } else if (type == "number") {
        expr = "json-number";
      } else if (type == "boolean" || type == "null" || type == "object" || type == "array") {
        expr = "json-" + type;
      }
      alternatives += (alternatives.empty() ? "" : " | ") + expr;
    }
    return "(" + alternatives + ")";
  }

  // One function with its parameters: required ones in schema order, then the optional.
  std::string function(const Json& fn) {
    const std::string name = fn["name"].get<std::string>();
    std::string body = gbnf_literal("<function=" + name + ">\n");
    const Json* params = fn.contains("parameters") ? &fn["parameters"] : nullptr;
    const Json* props = params && params->is_object() && params->contains("properties")
                            ? &(*params)["properties"]
                            : nullptr;
    std::vector<std::string> required;
    if (params && params->is_object() && params->contains("required") &&
        (*params)["required"].is_array())
      for (const Json& r : (*params)["required"])
        if (r.is_string()) required.push_back(r.get<std::string>());
    auto is_required = [&](const std::string& key) {
      return std::find(required.begin(), required.end(), key) != required.end();
    };
    auto parameter = [&](const std::string& key, const Json& schema) {
      return "(" + gbnf_literal("<parameter=" + key + ">\n") + " " + value(schema) + " " +
             gbnf_literal("\n</parameter>\n") + ")";
    };
    if (props && props->is_object()) {
      for (const auto& [key, schema] : props->items())
        if (is_required(key)) body += " " + parameter(key, schema);
      for (const std::string& key : required)
        if (!props->contains(key)) body += " " + parameter(key, Json::object());
      for (const auto& [key, schema] : props->items())
        if (!is_required(key)) body += " " + parameter(key, schema) + "?";
    } else {
      for (const std::string& key : required) body += " " + parameter(key, Json::object());
    }
    body += " " + gbnf_literal("</function>\n");
    return add_rule(body);
  }

  std::string text(const std::string& root) const {
    return "root ::= " + root + "\n" + rules_ +
           "tc-char ::= [^<] | \"<\" [^/]\n"
           "tc-text ::= tc-char*\n" +
           json_gbnf_rules();
  }

 private:
  static std::string literal_value(const Json& v) {
    return gbnf_literal(v.is_string() ? v.get<std::string>() : v.dump());
  }

  std::string rules_;
  int next_ = 0;
};

}  // namespace

std::string Qwen35ChatFormat::tool_call_grammar(const std::vector<ToolDefinition>& tools,
                                                const std::string& only_function,
                                                bool parallel) const {
  ToolGrammarWriter writer;
  std::string functions;
  for (const ToolDefinition& tool : tools) {
    const Json* fn = function_of(tool);
    if (!fn) continue;
    if (!only_function.empty() && (*fn)["name"].get<std::string>() != only_function) continue;
    functions += (functions.empty() ? "" : " | ") + writer.function(*fn);
  }
  if (functions.empty()) return {};
  const std::string call = writer.add_rule(gbnf_literal("<tool_call>\n") + " (" + functions + ") " +
                                           gbnf_literal("</tool_call>"));
  // A named function is called once; "required" may call several when parallel calls are
  // allowed (bounded, so that a model cannot loop on calls forever).
  const bool several = parallel && only_function.empty();
  return writer.text(several ? call + " (\"\\n\" " + call + "){0,7}" : call);
}

}  // namespace hostlm::qwen35
