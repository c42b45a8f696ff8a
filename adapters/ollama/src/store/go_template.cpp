// GoTemplate: parsing, running, and Ollama's chat rendering modes (template.Execute).
#include <algorithm>

#include "go_template_ast.h"
#include "hostlm/json_input.h"
#include "hostlm/ollama/errors.h"
#include "text_util.h"

namespace hostlm::ollama {
namespace {

using json = nlohmann::ordered_json;
using tmpl::Arg;
using tmpl::List;
using tmpl::Node;
using tmpl::Pipe;

// Every field and variable field name in the tree (Ollama's template.Identifiers).
void identifiers(const List& list, std::vector<std::string>& out);
void identifiers(const Pipe& p, std::vector<std::string>& out) {
  for (const auto& c : p.cmds)
    for (const Arg& a : c.args) {
      if (a.kind == Arg::Kind::kField || a.kind == Arg::Kind::kVariable)
        out.insert(out.end(), a.fields.begin(), a.fields.end());
      if (a.kind == Arg::Kind::kVariable) out.push_back(a.text);
      if (a.pipe) identifiers(*a.pipe, out);
    }
}
void identifiers(const List& list, std::vector<std::string>& out) {
  for (const Node& n : list) {
    if (n.pipe) identifiers(*n.pipe, out);
    if (n.list) identifiers(*n.list, out);
    if (n.else_list) identifiers(*n.else_list, out);
  }
}

// Ollama's legacy-mode rewrite: everything after the first `.Response` field, in tree order,
// is deleted (branch conditions are not visited, as in Ollama's deleteNode).
class ResponseCut {
 public:
  List list(const List& in) {
    List out;
    if (cut_) return out;
    for (const Node& n : in)
      if (auto kept = node(n)) out.push_back(std::move(*kept));
    return out;
  }

 private:
  std::optional<Node> node(const Node& n) {
    if (cut_) return std::nullopt;
    Node out = n;
    switch (n.kind) {
      case Node::Kind::kAction: {
        auto p = pipe(*n.pipe);
        if (!p) return std::nullopt;
        out.pipe = p;
        return out;
      }
      case Node::Kind::kIf:
      case Node::Kind::kWith:
      case Node::Kind::kRange:
        out.list = std::make_shared<List>(list(*n.list));
        if (n.else_list) out.else_list = std::make_shared<List>(list(*n.else_list));
        return out;
      default:
        return out;
    }
  }

  std::shared_ptr<Pipe> pipe(const Pipe& p) {
    if (cut_) return nullptr;
    auto out = std::make_shared<Pipe>(p);
    out->cmds.clear();
    for (const auto& c : p.cmds) {
      tmpl::Command kept = c;
      kept.args.clear();
      for (const Arg& a : c.args) {
        if (cut_) continue;
        if (a.kind == Arg::Kind::kField &&
            std::find(a.fields.begin(), a.fields.end(), "Response") != a.fields.end())
          cut_ = true;
        kept.args.push_back(a);
      }
      if (kept.args.empty()) return nullptr;
      out->cmds.push_back(std::move(kept));
    }
    return out->cmds.empty() ? nullptr : out;
  }

  bool cut_ = false;
};

const json* get(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string get_string(const json& obj, const char* key) {
  const json* v = get(obj, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

// A tool property in the key order Go marshals api.ToolProperty.
json property(const json& p) {
  if (!p.is_object()) return p;
  json out = json::object();
  if (const json* any = get(p, "anyOf"); any && any->is_array()) {
    json list = json::array();
    for (const auto& x : *any) list.push_back(property(x));
    out["anyOf"] = list;
  }
  if (const json* t = get(p, "type")) out["type"] = t->is_array() && t->size() == 1 ? (*t)[0] : *t;
  for (const char* k : {"items", "description", "enum"})
    if (const json* v = get(p, k)) out[k] = *v;
  if (const json* props = get(p, "properties"); props && props->is_object()) {
    json m = json::object();
    for (const auto& [k, v] : props->items()) m[k] = property(v);
    out["properties"] = m;
  }
  if (const json* r = get(p, "required")) out["required"] = *r;
  return out;
}

// Ollama's templateTool: type, items, function {name, description, parameters {type, $defs,
// items, required, properties (a map: sorted keys)}}.
json template_tools(const json& tools) {
  if (!tools.is_array() || tools.empty()) return nullptr;
  json out = json::array();
  for (const auto& t : tools) {
    json tool = json::object();
    tool["type"] = get_string(t, "type");
    if (const json* items = get(t, "items")) tool["items"] = *items;
    const json* fn = get(t, "function");
    json f = json::object();
    f["name"] = fn ? get_string(*fn, "name") : "";
    f["description"] = fn ? get_string(*fn, "description") : "";
    const json* params = fn ? get(*fn, "parameters") : nullptr;
    json p = json::object();
    p["type"] = params ? get_string(*params, "type") : "";
    for (const char* k : {"$defs", "items"})
      if (const json* v = params ? get(*params, k) : nullptr) p[k] = *v;
    if (const json* r = params ? get(*params, "required") : nullptr;
        r && r->is_array() && !r->empty())
      p["required"] = *r;
    const json* props = params ? get(*params, "properties") : nullptr;
    if (props && props->is_object()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : props->items()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());
      json m = json::object();
      for (const auto& k : keys) m[k] = property((*props)[k]);
      p["properties"] = m;
    } else {
      p["properties"] = nullptr;
    }
    f["parameters"] = p;
    tool["function"] = f;
    out.push_back(tool);
  }
  return out;
}

json sorted_object(const json& v) {
  if (v.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [k, x] : v.items()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    json out = json::object();
    for (const auto& k : keys) out[k] = sorted_object(v[k]);
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& x : v) out.push_back(sorted_object(x));
    return out;
  }
  return v;
}

// Ollama's templateMessage (Go field names) from an API message.
json template_message(const json& m) {
  json out = json::object();
  out["Role"] = get_string(m, "role");
  out["Content"] = get_string(m, "content");
  out["Thinking"] = get_string(m, "thinking");
  const json* images = get(m, "images");
  out["Images"] = images && images->is_array() ? *images : json::array();
  json calls = json::array();
  if (const json* tc = get(m, "tool_calls"); tc && tc->is_array()) {
    for (const auto& c : *tc) {
      const json* fn = get(c, "function");
      json args = fn && get(*fn, "arguments") ? (*fn)["arguments"] : json::object();
      if (args.is_string()) {
        // Not JSON (or too deep to walk): left as text, the template prints what was sent.
        json decoded = parse_input_json_or_discarded(args.get<std::string>());
        if (!decoded.is_discarded()) args = std::move(decoded);
      }
      json f = json::object();
      const json* index = fn ? get(*fn, "index") : nullptr;
      f["Index"] = index && index->is_number() ? *index : json(0);
      f["Name"] = fn ? get_string(*fn, "name") : "";
      f["Arguments"] = sorted_object(args);
      calls.push_back(json{{"ID", get_string(c, "id")}, {"Function", f}});
    }
  }
  out["ToolCalls"] = calls;
  out["ToolName"] = get_string(m, "tool_name");
  out["ToolCallID"] = get_string(m, "tool_call_id");
  return out;
}

struct ThinkValues {
  bool think = false;
  std::string level;
  bool is_set = false;
};

ThinkValues think_values(const json& think) {
  ThinkValues t;
  t.is_set = !think.is_null();
  if (think.is_boolean()) {
    t.think = think.get<bool>();
    t.level = t.think ? "medium" : "";
  } else if (think.is_string()) {
    t.level = think.get<std::string>();
    t.think = t.level == "high" || t.level == "medium" || t.level == "low" || t.level == "max";
  }
  return t;
}

}  // namespace

GoTemplate::GoTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
GoTemplate::~GoTemplate() = default;
GoTemplate::GoTemplate(GoTemplate&&) noexcept = default;
GoTemplate& GoTemplate::operator=(GoTemplate&&) noexcept = default;
GoTemplate::GoTemplate(const GoTemplate&) = default;
GoTemplate& GoTemplate::operator=(const GoTemplate&) = default;

GoTemplate GoTemplate::parse(std::string_view text) {
  auto impl = std::make_shared<Impl>();
  impl->source = std::string(text);
  impl->root = tmpl::parse(text);
  GoTemplate t(impl);
  // As Ollama: a template that uses neither .Messages nor .Response gets {{ .Response }}.
  if (!t.references("Messages") && !t.references("Response")) {
    auto pipe = std::make_shared<Pipe>();
    tmpl::Command cmd;
    Arg a;
    a.kind = Arg::Kind::kField;
    a.fields = {"Response"};
    cmd.args.push_back(a);
    pipe->cmds.push_back(cmd);
    impl->root.push_back(Node{Node::Kind::kAction, "", pipe, nullptr, nullptr, 0});
  }
  return t;
}

std::string GoTemplate::execute(const nlohmann::ordered_json& data) const {
  return tmpl::execute(impl_->root, data);
}

bool GoTemplate::references(std::string_view field) const {
  std::vector<std::string> names;
  identifiers(impl_->root, names);
  const std::string want = to_lower(field);
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return to_lower(n) == want; });
}

std::string GoTemplate::render_generate(const std::string& prompt, const std::string& suffix,
                                        const nlohmann::ordered_json& think) const {
  const ThinkValues t = think_values(think);
  return execute(json{{"Prompt", prompt},
                      {"Suffix", suffix},
                      {"Response", ""},
                      {"Think", t.think},
                      {"ThinkLevel", t.level},
                      {"IsThinkSet", t.is_set}});
}

std::string GoTemplate::render_chat(const nlohmann::ordered_json& messages,
                                    const nlohmann::ordered_json& tools,
                                    const nlohmann::ordered_json& think) const {
  const ThinkValues t = think_values(think);
  // collate: system messages joined; neighbours with one role merged, tool messages never.
  std::string system;
  bool first_system = true;
  json collated = json::array();
  if (messages.is_array()) {
    for (const auto& m : messages) {
      json msg = m.is_object() ? m : json::object();
      const std::string role = get_string(msg, "role");
      if (role == "system") {
        system += (first_system ? "" : "\n\n") + get_string(msg, "content");
        first_system = false;
      }
      if (!collated.empty() && get_string(collated.back(), "role") == role && role != "tool") {
        collated.back()["content"] =
            get_string(collated.back(), "content") + "\n\n" + get_string(msg, "content");
      } else {
        collated.push_back(msg);
      }
    }
  }
  if (references("Messages")) {
    json list = json::array();
    for (const auto& m : collated) list.push_back(template_message(m));
    return execute(json{{"System", system},
                        {"Messages", list},
                        {"Tools", template_tools(tools)},
                        {"Response", ""},
                        {"Think", t.think},
                        {"ThinkLevel", t.level},
                        {"IsThinkSet", t.is_set}});
  }
  // Legacy mode: one run per (system, user, assistant) turn.
  std::string out, sys, prompt, response;
  auto values = [&] {
    return json{{"System", sys},    {"Prompt", prompt},      {"Response", response},
                {"Think", t.think}, {"ThinkLevel", t.level}, {"IsThinkSet", t.is_set}};
  };
  auto run = [&] {
    out += execute(values());
    sys.clear();
    prompt.clear();
    response.clear();
  };
  for (const auto& m : collated) {
    const std::string role = get_string(m, "role");
    if (role == "system") {
      if (!prompt.empty() || !response.empty()) run();
      sys = get_string(m, "content");
    } else if (role == "user") {
      if (!response.empty()) run();
      prompt = get_string(m, "content");
    } else if (role == "assistant") {
      response = get_string(m, "content");
    }
  }
  const List cut = ResponseCut().list(impl_->root);
  return out + tmpl::execute(cut, values());
}

}  // namespace hostlm::ollama
