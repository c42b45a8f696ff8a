// show.h: the /api/show body of a stored model, its capabilities, and the text of
// `ollama show` (sections and their order as in Ollama's cmd/cmd.go).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "gguf_info.h"
#include "hostlm/ollama/go_template.h"
#include "hostlm/ollama/modelfile.h"
#include "hostlm/ollama/show.h"
#include "text_table.h"
#include "text_util.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;
using Rows = std::vector<std::vector<std::string>>;

std::string string_at(const Json& j, const std::string& key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Json* number_at(const Json& j, const std::string& key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? &*it : nullptr;
}

// Go's strconv.FormatFloat(v, 'f', -1, 64): no exponent, the fewest digits that read back.
std::string plain_number(const Json& v) {
  if (v.is_number_integer()) return v.dump();
  char buf[400];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof buf, v.get<double>(), std::chars_format::fixed);
  return std::string(buf, ec == std::errc() ? end : buf);
}

// Go's %g / %v of a float64: shortest digits, exponent form below 1e-4 and from 1e6 on.
std::string go_g(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto sci = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string scientific(buf, sci.ptr);
  const int exponent = std::atoi(scientific.c_str() + scientific.find('e') + 1);
  if (exponent < -4 || exponent >= 6) return scientific;
  const auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

// A value as Go's %v prints what encoding/json decoded: numbers are float64s, arrays
// "[a b c]".
std::string go_value(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return go_g(v.get<double>());
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + go_value(v[i]);
    return out + "]";
  }
  if (v.is_null()) return "<nil>";
  return "map[...]";
}

// A metadata value for the Metadata table: arrays cut to what fits in about ten columns.
std::string metadata_value(const Json& v) {
  if (v.is_string() || v.is_boolean() || v.is_number()) return go_value(v);
  if (!v.is_array()) return v.is_object() ? "map[string]interface {}" : "<nil>";
  constexpr size_t kTarget = 10;
  size_t shown = 0, total = 1;  // the opening bracket
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t w = display_width(go_value(v[i])) + (i > 0 ? 2 : 0);
    if (total + w > kTarget && i > 0) break;
    total += w;
    ++shown;
  }
  if (shown == v.size()) return go_value(v);
  std::string out = "[";
  for (size_t i = 0; i < shown; ++i) out += (i ? " " : "") + go_value(v[i]);
  return out + " ...+" + std::to_string(v.size() - shown) + " more]";
}

// The first `n` non-blank lines of a text, trimmed, and "..." when there were more.
Rows head(const std::string& text, size_t n) {
  Rows rows;
  size_t count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::string trimmed(trim_space(line));
    if (trimmed.empty()) continue;
    if (++count <= n) rows.push_back({"", trimmed});
  }
  if (count > n) rows.push_back({"", "..."});
  return rows;
}

void section(std::string& out, const std::string& title, const Rows& rows, size_t wrap = 30) {
  out += "  " + title + "\n" + render_table(rows, wrap) + "\n";
}

Rows model_rows(const Json& show) {
  Rows rows;
  const Json details = show.value("details", Json::object());
  if (!string_at(show, "remote_host").empty()) {
    rows.push_back({"", "Remote model", string_at(show, "remote_model")});
    rows.push_back({"", "Remote URL", string_at(show, "remote_host")});
  }
  const auto info = show.find("model_info");
  if (info != show.end() && info->is_object()) {
    const std::string arch = string_at(*info, "general.architecture");
    if (!arch.empty()) rows.push_back({"", "architecture", arch});
    std::string parameters = string_at(details, "parameter_size");
    if (const Json* count = number_at(*info, "general.parameter_count");
        parameters.empty() && count)
      parameters = human_number(static_cast<uint64_t>(count->get<double>()));
    if (!parameters.empty()) rows.push_back({"", "parameters", parameters});
    if (const Json* v = number_at(*info, arch + ".context_length"))
      rows.push_back({"", "context length", plain_number(*v)});
    if (const Json* v = number_at(*info, arch + ".embedding_length"))
      rows.push_back({"", "embedding length", plain_number(*v)});
  } else {
    rows.push_back({"", "architecture", string_at(details, "family")});
    rows.push_back({"", "parameters", string_at(details, "parameter_size")});
  }
  rows.push_back({"", "quantization", string_at(details, "quantization_level")});
  if (const std::string r = string_at(show, "requires"); !r.empty())
    rows.push_back({"", "requires", r});
  return rows;
}

Rows projector_rows(const Json& info) {
  Rows rows;
  const std::string arch = string_at(info, "general.architecture");
  if (!arch.empty()) rows.push_back({"", "architecture", arch});
  if (const Json* count = number_at(info, "general.parameter_count"))
    rows.push_back({"", "parameters", human_number(static_cast<uint64_t>(count->get<double>()))});
  auto modality_value = [&](const std::string& suffix) -> const Json* {
    for (const char* modality : {"vision", "audio"})
      if (const Json* v = number_at(info, arch + "." + modality + "." + suffix)) return v;
    return nullptr;
  };
  if (const Json* v = modality_value("embedding_length"))
    rows.push_back({"", "embedding length", plain_number(*v)});
  if (const Json* v = modality_value("projection_dim"))
    rows.push_back({"", "dimensions", plain_number(*v)});
  return rows;
}

}  // namespace

std::vector<std::string> model_capabilities(const StoredModel& m) {
  std::vector<std::string> caps = {"completion"};
  if (!m.projector_paths.empty()) caps.push_back("vision");
  if (m.template_text && m.renderer().empty()) {
    try {
      const GoTemplate t = GoTemplate::parse(*m.template_text);
      if (t.references("Tools")) caps.push_back("tools");
      if (t.references("Thinking")) caps.push_back("thinking");
    } catch (const std::exception&) {
      // A template that does not parse promises nothing (create refuses such templates;
      // an Ollama store might still hold one).
    }
    return caps;
  }
  caps.push_back("tools");
  caps.push_back("thinking");
  return caps;
}

nlohmann::ordered_json show_response(const StoredModel& m, bool verbose) {
  Json j = Json::object();
  if (!m.licenses.empty()) {
    std::string license;
    for (const std::string& l : m.licenses) license += (license.empty() ? "" : "\n") + l;
    j["license"] = license;
  }
  j["modelfile"] = format_modelfile(m);
  j["parameters"] = format_parameters(m.params);
  if (m.template_text) j["template"] = *m.template_text;
  if (m.system) j["system"] = *m.system;
  if (!m.renderer().empty()) j["renderer"] = m.renderer();
  if (!m.parser().empty()) j["parser"] = m.parser();
  j["details"] = m.details();
  if (!m.messages.empty()) j["messages"] = m.messages;
  j["model_info"] = m.model_path.empty() ? Json::object() : model_info(m.model_path, verbose);
  if (!m.projector_paths.empty())
    j["projector_info"] = model_info(m.projector_paths.front(), verbose);
  if (verbose && !m.model_path.empty()) j["tensors"] = model_tensors(m.model_path);
  j["capabilities"] = model_capabilities(m);
  if (const std::string r = string_at(m.config, "requires"); !r.empty()) j["requires"] = r;
  return j;
}

std::string format_show_info(const nlohmann::ordered_json& show, bool verbose) {
  std::string out;
  section(out, "Model", model_rows(show));
  if (const auto caps = show.find("capabilities");
      caps != show.end() && caps->is_array() && !caps->empty()) {
    Rows rows;
    for (const Json& c : *caps) rows.push_back({"", go_value(c)});
    section(out, "Capabilities", rows);
  }
  if (const auto p = show.find("projector_info"); p != show.end() && p->is_object())
    section(out, "Projector", projector_rows(*p));
  if (const std::string params = string_at(show, "parameters"); !params.empty()) {
    Rows rows;
    std::istringstream in(params);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> row = {""};
      std::istringstream fields(line);
      for (std::string f; fields >> f;) row.push_back(f);
      if (row.size() > 1) rows.push_back(std::move(row));
    }
    section(out, "Parameters", rows);
  }
  const auto info = show.find("model_info");
  if (verbose && info != show.end() && info->is_object()) {
    std::vector<std::string> keys;
    for (const auto& item : info->items()) keys.push_back(item.key());
    std::sort(keys.begin(), keys.end());
    Rows rows;
    for (const std::string& k : keys) rows.push_back({"", k, metadata_value((*info)[k])});
    section(out, "Metadata", rows);
  }
  if (const auto t = show.find("tensors");
      verbose && t != show.end() && t->is_array() && !t->empty()) {
    Rows rows;
    for (const Json& tensor : *t) {
      std::string shape = "[";  // unsigned integers, never in exponent form
      for (const Json& d : tensor.value("shape", Json::array()))
        shape += (shape.size() > 1 ? " " : "") + (d.is_number() ? plain_number(d) : go_value(d));
      rows.push_back({"", string_at(tensor, "name"), string_at(tensor, "type"), shape + "]"});
    }
    section(out, "Tensors", rows);
  }
  if (const std::string s = string_at(show, "system"); !s.empty())
    section(out, "System", head(s, 2), 100);
  if (const std::string l = string_at(show, "license"); !l.empty())
    section(out, "License", head(l, 2), 100);
  return out;
}

}  // namespace hostlm::ollama
