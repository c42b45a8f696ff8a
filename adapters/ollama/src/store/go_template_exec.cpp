// Executes a parsed template on JSON data with Go text/template's rules: truthiness, field
// look-up, variables and their scopes, pipelines, range/with/if, and the built-in functions
// plus Ollama's json/currentDate/yesterdayDate/toTypeScriptType.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "go_template_ast.h"
#include "hostlm/error.h"
#include "manifest.h"
#include "text_util.h"

namespace hostlm::ollama::tmpl {
namespace {

using json = nlohmann::ordered_json;

// A JSON value, either inside the caller's data or computed (then `hold` owns it).
struct Value {
  const json* p;
  std::shared_ptr<const json> hold;
  const json& get() const { return *p; }
  static Value own(json j) {
    auto h = std::make_shared<const json>(std::move(j));
    return Value{h.get(), h};
  }
};

const json& null_json() {
  static const json n;
  return n;
}

[[noreturn]] void fail(int line, const std::string& message) {
  throw Error("template: :" + std::to_string(line) + ": executing: " + message);
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "nil";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "slice";
    case json::value_t::object:
      return "map";
    case json::value_t::number_float:
      return "float64";
    default:
      return "int";
  }
}

bool truth(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return false;
    case json::value_t::boolean:
      return v.get<bool>();
    case json::value_t::string:
      return !v.get_ref<const std::string&>().empty();
    case json::value_t::array:
    case json::value_t::object:
      return !v.empty();
    case json::value_t::number_float:
      return v.get<double>() != 0;
    default:
      return v.get<int64_t>() != 0;
  }
}

// fmt's %v of a float64: strconv 'g' with the shortest digits (%e below 1e-4 and from 1e6).
std::string go_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, end);  // d[.ddd]e[+-]XX
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 6) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
          digits.substr(static_cast<size_t>(exp) + 1);
  }
  return neg ? "-" + out : out;
}

std::string compact_json(const json& v) {
  std::string s = go_json(v);
  s.pop_back();  // json.Marshal has no newline
  return s;
}

std::string to_text(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "";
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<uint64_t>());
    case json::value_t::number_float:
      return go_float(v.get<double>());
    default:
      return compact_json(v);
  }
}

// .Name as "Name", "name", or "snake_name" (ToolCalls -> tool_calls).
const json* find_field(const json& obj, const std::string& name) {
  if (auto it = obj.find(name); it != obj.end()) return &*it;
  std::string lower = name;
  lower[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(lower[0])));
  if (auto it = obj.find(lower); it != obj.end()) return &*it;
  std::string snake;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0 && !std::isupper(static_cast<unsigned char>(name[i - 1]))) snake += '_';
      snake += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      snake += c;
    }
  }
  if (auto it = obj.find(snake); it != obj.end()) return &*it;
  return nullptr;
}

bool is_number(const json& v) { return v.is_number(); }

bool basic_equal(const json& a, const json& b, int line) {
  if (a.is_null() || b.is_null()) {
    // A missing field is the zero value of whatever it is compared with.
    return !truth(a.is_null() ? b : a);
  }
  if (is_number(a) && is_number(b)) {
    if (a.is_number_float() || b.is_number_float()) return a.get<double>() == b.get<double>();
    if (a.is_number_unsigned() || b.is_number_unsigned())
      return a.get<uint64_t>() == b.get<uint64_t>();
    return a.get<int64_t>() == b.get<int64_t>();
  }
  if (a.type() != b.type()) fail(line, "error calling eq: incompatible types for comparison");
  return a == b;
}

int compare(const json& a, const json& b, const char* fn, int line) {
  if (is_number(a) && is_number(b)) {
    const double x = a.get<double>(), y = b.get<double>();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  fail(line, std::string("error calling ") + fn + ": " +
                 (a.type() == b.type() ? "invalid type for comparison"
                                       : "incompatible types for comparison"));
}

int64_t to_index(const json& v, int line, const char* fn) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
  // A whole float inside int64's range (converting one outside it is undefined behaviour).
  if (const double d = v.is_number_float() ? v.get<double>() : 0.5;
      d == std::floor(d) && d >= -9.2e18 && d <= 9.2e18)
    return static_cast<int64_t>(d);
  fail(line,
       std::string("error calling ") + fn + ": cannot index slice/array with type " + type_name(v));
}

std::string date(int days_back) {
  std::time_t t = std::time(nullptr) - static_cast<std::time_t>(days_back) * 86400;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string ts_type(const std::string& t) {
  if (t == "string") return "string";
  if (t == "number" || t == "integer") return "number";
  if (t == "boolean") return "boolean";
  if (t == "array") return "any[]";
  if (t == "object") return "Record<string, any>";
  if (t == "null") return "null";
  return "any";
}

std::string typescript_type(const json& prop) {
  if (!prop.is_object()) return "any";
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out;
  };
  if (auto any = prop.find("anyOf"); any != prop.end() && any->is_array() && !any->empty()) {
    std::vector<std::string> parts;
    for (const auto& p : *any) parts.push_back(typescript_type(p));
    return join(parts);
  }
  const auto type = prop.find("type");
  if (type == prop.end()) return "any";
  if (type->is_string()) return ts_type(type->get<std::string>());
  if (type->is_array() && !type->empty()) {
    std::vector<std::string> parts;
    for (const auto& t : *type)
      parts.push_back(t.is_string() ? ts_type(t.get<std::string>()) : "any");
    return join(parts);
  }
  return "any";
}

// fmt.Sprintf for the verbs templates use.
std::string go_sprintf(const std::string& format, const std::vector<Value>& args) {
  std::string out;
  size_t arg = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    bool minus = false, zero = false, plus = false;
    for (; i < format.size() && std::string_view("-0+# ").find(format[i]) != std::string_view::npos;
         ++i) {
      minus |= format[i] == '-';
      zero |= format[i] == '0';
      plus |= format[i] == '+';
    }
    // As Go's parsenum: a number past a million is taken for garbage and swallows the rest of
    // the format, which then reads %!(NOVERB).
    const auto number = [&](int& n) {
      n = 0;
      for (; i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])); ++i) {
        if (n > 1000000) {
          i = format.size();
          return;
        }
        n = n * 10 + (format[i] - '0');
      }
    };
    int width = -1, prec = -1;
    if (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) number(width);
    if (i < format.size() && format[i] == '.') {
      ++i;
      number(prec);
    }
    if (i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    const char verb = format[i];
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (arg >= args.size()) {
      out += std::string("%!") + verb + "(MISSING)";
      continue;
    }
    const json& v = args[arg++].get();
    std::string s;
    char buf[512];
    switch (verb) {
      case 'v':
      case 's':
        s = to_text(v);
        break;
      case 'q':
        s = v.is_string() ? go_quote(v.get<std::string>()) : to_text(v);
        break;
      case 't':
        s = v.is_boolean() ? (v.get<bool>() ? "true" : "false") : "%!t(" + to_text(v) + ")";
        break;
      case 'd':
        if (v.is_number_integer() || v.is_number_unsigned()) {
          s = std::to_string(v.get<int64_t>());
          if (plus && v.get<int64_t>() >= 0) s = "+" + s;
        } else {
          s = "%!d(" + type_name(v) + "=" + to_text(v) + ")";
        }
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'g':
        if (v.is_number()) {
          if (verb == 'g' && prec < 0) {
            s = go_float(v.get<double>());
          } else {
            const std::string f = std::string("%") + (plus ? "+" : "") + "." +
                                  std::to_string(prec < 0 ? 6 : prec) + (verb == 'F' ? 'f' : verb);
            std::snprintf(buf, sizeof buf, f.c_str(), v.get<double>());
            s = buf;
          }
        } else {
          s = std::string("%!") + verb + "(" + type_name(v) + "=" + to_text(v) + ")";
        }
        break;
      case 'x':
      case 'X':
        if (v.is_number_integer() || v.is_number_unsigned()) {
          std::snprintf(buf, sizeof buf, verb == 'x' ? "%llx" : "%llX",
                        static_cast<long long>(v.get<int64_t>()));
          s = buf;
        } else {
          for (unsigned char c : to_text(v)) {
            std::snprintf(buf, sizeof buf, verb == 'x' ? "%02x" : "%02X", c);
            s += buf;
          }
        }
        break;
      case 'c':
        if (v.is_number_integer()) append_utf8(s, static_cast<char32_t>(v.get<int64_t>()));
        break;
      default:
        s = std::string("%!") + verb + "(" + type_name(v) + "=" + to_text(v) + ")";
    }
    if ((verb == 's' || verb == 'v' || verb == 'q') && prec >= 0 &&
        s.size() > static_cast<size_t>(prec))
      s.resize(static_cast<size_t>(prec));
    if (width > 0 && s.size() < static_cast<size_t>(width)) {
      const size_t pad = static_cast<size_t>(width) - s.size();
      if (minus) {
        s += std::string(pad, ' ');
      } else {
        s = std::string(pad, zero && v.is_number() ? '0' : ' ') + s;
      }
    }
    out += s;
  }
  if (arg < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = arg; k < args.size(); ++k)
      out += (k > arg ? ", " : "") + type_name(args[k].get()) + "=" + to_text(args[k].get());
    out += ")";
  }
  return out;
}

class Executor {
 public:
  explicit Executor(const json& root) { vars_.emplace_back("$", Value{&root, nullptr}); }

  std::string run(const List& list) {
    walk(list, Value{vars_[0].second.p, nullptr});
    return std::move(out_);
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow walk(const List& list, const Value& dot) {
    for (const Node& n : list) {
      const Flow f = node(n, dot);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow node(const Node& n, const Value& dot) {
    switch (n.kind) {
      case Node::Kind::kText:
        emit(n.text, n.line);
        return Flow::kNormal;
      case Node::Kind::kAction: {
        const Value v = pipe(*n.pipe, dot);
        if (n.pipe->decl.empty()) emit(to_text(v.get()), n.line);
        return Flow::kNormal;
      }
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
      case Node::Kind::kIf:
      case Node::Kind::kWith: {
        const size_t mark = vars_.size();
        const Value v = pipe(*n.pipe, dot);
        Flow f = Flow::kNormal;
        if (truth(v.get())) {
          f = walk(*n.list, n.kind == Node::Kind::kWith ? v : dot);
        } else if (n.else_list) {
          f = walk(*n.else_list, dot);
        }
        vars_.resize(mark);
        return f;
      }
      case Node::Kind::kRange:
        return range(n, dot);
    }
    return Flow::kNormal;
  }

  Flow range(const Node& n, const Value& dot) {
    const size_t mark = vars_.size();
    // The loop variables are set per element, not from the pipeline's value.
    Pipe p = *n.pipe;
    const std::vector<std::string> names = p.decl;
    p.decl.clear();
    const Value v = pipe(p, dot);
    const json& coll = v.get();
    size_t count = 0;
    auto body = [&](const json& key, const json* elem, bool own_elem, json owned) -> Flow {
      vars_.resize(mark);
      Value ev = own_elem ? Value::own(std::move(owned)) : Value{elem, v.hold};
      if (names.size() == 1) vars_.emplace_back(names[0], ev);
      if (names.size() == 2) {
        vars_.emplace_back(names[0], Value::own(key));
        vars_.emplace_back(names[1], ev);
      }
      ++count;
      return walk(*n.list, ev);
    };
    Flow result = Flow::kNormal;
    if (coll.is_array()) {
      for (size_t i = 0; i < coll.size(); ++i) {
        const Flow f = body(json(i), &coll[i], false, nullptr);
        if (f == Flow::kBreak) break;
      }
    } else if (coll.is_object()) {
      std::vector<std::string> keys;
      for (const auto& [k, val] : coll.items()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());  // Go visits map keys in sorted order
      for (const auto& k : keys) {
        const Flow f = body(json(k), &coll[k], false, nullptr);
        if (f == Flow::kBreak) break;
      }
    } else if (coll.is_number_integer() || coll.is_number_unsigned()) {
      if (names.size() == 2) fail(n.line, "can't use two variables to range over an integer");
      for (int64_t i = 0; i < coll.get<int64_t>(); ++i) {
        const Flow f = body(json(i), nullptr, true, json(i));
        if (f == Flow::kBreak) break;
      }
    } else if (!coll.is_null()) {
      fail(n.line, "range can't iterate over " + to_text(coll));
    }
    vars_.resize(mark);
    if (count == 0 && n.else_list) result = walk(*n.else_list, dot);
    vars_.resize(mark);
    return result == Flow::kNormal ? Flow::kNormal : result;
  }

  Value pipe(const Pipe& p, const Value& dot) {
    std::optional<Value> v;
    for (const Command& c : p.cmds) v = command(c, dot, v);
    for (const std::string& name : p.decl) {
      if (p.assign) {
        auto it = std::find_if(vars_.rbegin(), vars_.rend(),
                               [&](const auto& x) { return x.first == name; });
        if (it == vars_.rend()) fail(p.line, "undefined variable: " + name);
        it->second = *v;
      } else {
        vars_.emplace_back(name, *v);
      }
    }
    return *v;
  }

  Value command(const Command& c, const Value& dot, const std::optional<Value>& piped) {
    const Arg& first = c.args[0];
    if (first.kind == Arg::Kind::kFunction) return call(first.text, c, dot, piped);
    if (c.args.size() > 1 || piped)
      fail(c.line, "can't give argument to non-function " + describe(first));
    if (first.kind == Arg::Kind::kNil) fail(c.line, "nil is not a command");
    return arg(first, dot);
  }

  std::string describe(const Arg& a) {
    std::string s;
    switch (a.kind) {
      case Arg::Kind::kVariable:
        s = a.text;
        break;
      case Arg::Kind::kDot:
        s = a.fields.empty() ? "." : "";
        break;
      case Arg::Kind::kString:
        s = go_quote(a.text);
        break;
      default:
        break;
    }
    for (const auto& f : a.fields) s += "." + f;
    return s.empty() ? "value" : s;
  }

  Value arg(const Arg& a, const Value& dot) {
    Value base{&null_json(), nullptr};
    switch (a.kind) {
      case Arg::Kind::kField:
      case Arg::Kind::kDot:
        base = dot;
        break;
      case Arg::Kind::kVariable: {
        auto it = std::find_if(vars_.rbegin(), vars_.rend(),
                               [&](const auto& x) { return x.first == a.text; });
        if (it == vars_.rend()) fail(a.line, "undefined variable: " + a.text);
        base = it->second;
        break;
      }
      case Arg::Kind::kString:
        base = Value::own(a.text);
        break;
      case Arg::Kind::kInt:
        base = Value::own(a.int_value);
        break;
      case Arg::Kind::kFloat:
        base = Value::own(a.float_value);
        break;
      case Arg::Kind::kBool:
        base = Value::own(a.bool_value);
        break;
      case Arg::Kind::kNil:
        base = Value{&null_json(), nullptr};
        break;
      case Arg::Kind::kPipe:
        base = pipe(*a.pipe, dot);
        break;
      case Arg::Kind::kFunction: {
        Command c;
        c.args.push_back(a);
        c.line = a.line;
        base = call(a.text, c, dot, std::nullopt);
        break;
      }
    }
    for (const std::string& f : a.fields) {
      const json& v = base.get();
      if (v.is_null()) {
        base = Value{&null_json(), nullptr};  // missingkey=zero: a missing parent is empty
      } else if (v.is_object()) {
        const json* found = find_field(v, f);
        base = found ? Value{found, base.hold} : Value{&null_json(), nullptr};
      } else {
        fail(a.line, "can't evaluate field " + f + " in type " + type_name(v));
      }
    }
    return base;
  }

  Value call(const std::string& fn, const Command& c, const Value& dot,
             const std::optional<Value>& piped) {
    const int line = c.line;
    const size_t n_args = c.args.size() - 1 + (piped ? 1 : 0);
    auto get_arg = [&](size_t i) -> Value {
      if (i + 1 < c.args.size()) return arg(c.args[i + 1], dot);
      return *piped;
    };
    auto need = [&](size_t lo, size_t hi) {
      if (n_args < lo || n_args > hi)
        fail(line, "wrong number of args for " + fn + ": want " +
                       (lo == hi ? std::to_string(lo) : "at least " + std::to_string(lo)) +
                       " got " + std::to_string(n_args));
    };
    if (fn == "and" || fn == "or") {
      need(1, SIZE_MAX);
      Value v = get_arg(0);
      for (size_t i = 1; i < n_args; ++i) {
        if (truth(v.get()) != (fn == "and")) break;  // short circuit, as Go 1.18+
        v = get_arg(i);
      }
      return v;
    }
    std::vector<Value> args;
    for (size_t i = 0; i < n_args; ++i) args.push_back(get_arg(i));
    if (fn == "not") {
      need(1, 1);
      return Value::own(!truth(args[0].get()));
    }
    if (fn == "eq") {
      need(2, SIZE_MAX);
      for (size_t i = 1; i < args.size(); ++i)
        if (basic_equal(args[0].get(), args[i].get(), line)) return Value::own(true);
      return Value::own(false);
    }
    if (fn == "ne") {
      need(2, 2);
      return Value::own(!basic_equal(args[0].get(), args[1].get(), line));
    }
    if (fn == "lt" || fn == "le" || fn == "gt" || fn == "ge") {
      need(2, 2);
      const int r = compare(args[0].get(), args[1].get(), fn.c_str(), line);
      return Value::own(fn == "lt" ? r < 0 : fn == "le" ? r <= 0 : fn == "gt" ? r > 0 : r >= 0);
    }
    if (fn == "len") {
      need(1, 1);
      const json& v = args[0].get();
      if (v.is_string())
        return Value::own(static_cast<int64_t>(v.get_ref<const std::string&>().size()));
      if (v.is_array() || v.is_object()) return Value::own(static_cast<int64_t>(v.size()));
      if (v.is_null()) return Value::own(int64_t{0});
      fail(line, "error calling len: len of type " + type_name(v));
    }
    if (fn == "index") {
      need(1, SIZE_MAX);
      Value v = args[0];
      for (size_t i = 1; i < args.size(); ++i) {
        const json& item = v.get();
        const json& key = args[i].get();
        if (item.is_array()) {
          const int64_t k = to_index(key, line, "index");
          if (k < 0 || k >= static_cast<int64_t>(item.size()))
            fail(line, "error calling index: index out of range: " + std::to_string(k));
          v = Value{&item[static_cast<size_t>(k)], v.hold};
        } else if (item.is_object()) {
          if (!key.is_string())
            fail(line,
                 "error calling index: value has type " + type_name(key) + "; should be string");
          auto it = item.find(key.get<std::string>());
          v = it == item.end() ? Value{&null_json(), nullptr} : Value{&*it, v.hold};
        } else if (item.is_string()) {
          const int64_t k = to_index(key, line, "index");
          const auto& s = item.get_ref<const std::string&>();
          if (k < 0 || k >= static_cast<int64_t>(s.size()))
            fail(line, "error calling index: index out of range: " + std::to_string(k));
          v = Value::own(
              static_cast<int64_t>(static_cast<unsigned char>(s[static_cast<size_t>(k)])));
        } else if (item.is_null()) {
          fail(line, "error calling index: index of untyped nil");
        } else {
          fail(line, "error calling index: can't index item of type " + type_name(item));
        }
      }
      return v;
    }
    if (fn == "slice") {
      need(1, 4);
      const json& item = args[0].get();
      std::vector<int64_t> idx;
      for (size_t i = 1; i < args.size(); ++i)
        idx.push_back(to_index(args[i].get(), line, "slice"));
      const int64_t len = item.is_string()
                              ? static_cast<int64_t>(item.get_ref<const std::string&>().size())
                          : item.is_array() ? static_cast<int64_t>(item.size())
                                            : -1;
      if (len < 0) fail(line, "error calling slice: can't slice item of type " + type_name(item));
      const int64_t lo = idx.size() > 0 ? idx[0] : 0;
      const int64_t hi = idx.size() > 1 ? idx[1] : len;
      if (lo < 0 || hi < lo || hi > len)
        fail(line, "error calling slice: index out of range: " +
                       std::to_string(lo < 0 || lo > len ? lo : hi));
      if (item.is_string())
        return Value::own(item.get_ref<const std::string&>().substr(static_cast<size_t>(lo),
                                                                    static_cast<size_t>(hi - lo)));
      json out = json::array();
      for (int64_t i = lo; i < hi; ++i) out.push_back(item[static_cast<size_t>(i)]);
      return Value::own(std::move(out));
    }
    if (fn == "print" || fn == "println") {
      std::string s;
      for (size_t i = 0; i < args.size(); ++i) {
        const bool space = fn == "println" ||
                           (i > 0 && !args[i].get().is_string() && !args[i - 1].get().is_string());
        if (i > 0 && space) s += ' ';
        s += to_text(args[i].get());
      }
      if (fn == "println") s += '\n';
      return Value::own(s);
    }
    if (fn == "printf") {
      need(1, SIZE_MAX);
      if (!args[0].get().is_string()) fail(line, "error calling printf: format is not a string");
      return Value::own(go_sprintf(args[0].get().get<std::string>(),
                                   std::vector<Value>(args.begin() + 1, args.end())));
    }
    if (fn == "json") {
      need(1, 1);
      return Value::own(compact_json(args[0].get()));
    }
    if (fn == "currentDate") return Value::own(date(0));
    if (fn == "yesterdayDate") return Value::own(date(1));
    if (fn == "toTypeScriptType") {
      need(1, 1);
      return Value::own(typescript_type(args[0].get()));
    }
    fail(line, "function \"" + fn + "\" not defined");
  }

  // A prompt is a few MB at most. A template that writes far more (wide printf fields in a
  // range over a long history) is stopped instead of being left to take the memory.
  static constexpr size_t kMaxOutput = size_t{64} << 20;
  void emit(std::string_view text, int line) {
    out_ += text;
    if (out_.size() > kMaxOutput) fail(line, "output exceeds 64 MiB");
  }

  std::vector<std::pair<std::string, Value>> vars_;
  std::string out_;
};

}  // namespace

std::string execute(const List& root, const json& data) { return Executor(data).run(root); }

}  // namespace hostlm::ollama::tmpl
