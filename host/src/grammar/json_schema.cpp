// JSON Schema -> GBNF. Each schema node becomes a rule named after its place in the schema;
// $ref targets get one rule each, reserved before their body is built so that recursive
// schemas refer to themselves. Anything the converter does not understand is an error
// naming the keyword and its JSON pointer: silently ignoring a constraint would produce
// output that fails validation.
#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/nesting.h"
#include "hostlm/error.h"

namespace hostlm::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Keywords that only annotate: accepted and ignored.
const std::set<std::string> kAnnotations = {
    "title",      "description", "$schema",   "$id",   "$comment",    "default", "examples",
    "deprecated", "readOnly",    "writeOnly", "$defs", "definitions", "$anchor"};

const std::set<std::string> kHandled = {"type",
                                        "properties",
                                        "required",
                                        "additionalProperties",
                                        "enum",
                                        "const",
                                        "anyOf",
                                        "oneOf",
                                        "allOf",
                                        "items",
                                        "prefixItems",
                                        "minItems",
                                        "maxItems",
                                        "minLength",
                                        "maxLength",
                                        "pattern",
                                        "format",
                                        "minimum",
                                        "maximum",
                                        "exclusiveMinimum",
                                        "exclusiveMaximum",
                                        "$ref"};

// Integer bounds beyond this are no constraint: the grammar never emits more than 15 digits.
constexpr double kIntLimit = 1e15;

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string repeat_suffix(uint64_t min, std::optional<uint64_t> max) {
  if (!max) return min == 0 ? "*" : min == 1 ? "+" : "{" + std::to_string(min) + ",}";
  if (min == *max) return "{" + std::to_string(min) + "}";
  if (min == 0 && *max == 1) return "?";
  return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

class Converter {
 public:
  explicit Converter(const Json& root) : root_(root) {}

  std::string run() {
    const std::string value = visit(root_, "", "root-value");
    std::string out = "root ::= ws " + value + " ws\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out + json_base_rules();
  }

 private:
  [[noreturn]] static void fail(const std::string& ptr, const std::string& what) {
    throw Error("JSON Schema at '" + (ptr.empty() ? std::string("#") : "#" + ptr) + "': " + what);
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
    std::string name = unique_name(hint);
    rules_.emplace_back(name, body);
    by_body_.emplace(body, name);
    return name;
  }

  std::string unique_name(const std::string& hint) {
    std::string base;
    for (char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      base += ok ? c : '-';
    }
    if (base.empty()) base = "r";
    // Names are never given back, so numbering a base on from where it stopped finds what
    // counting from 2 would, without retrying every earlier number (an object of n properties
    // names n tail and head rules: that retrying was quadratic).
    int& n = next_number_[base];
    std::string name = base;
    if (n == 0)
      n = 2;
    else
      name = base + "-" + std::to_string(n++);
    while (!names_.insert(name).second) name = base + "-" + std::to_string(n++);
    return name;
  }

  static uint64_t get_count(const Json& s, const char* key, const std::string& ptr) {
    const Json& v = s.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(ptr + "/" + key, "must be a non-negative integer");
    return v.get<uint64_t>();
  }

  std::string visit(const Json& s, const std::string& ptr, const std::string& hint) {
    const NestingLevel level(depth_, kMaxNesting,
                             [&](const std::string& what) { fail(ptr, what); });
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(ptr, "schema 'false' matches nothing");
      return "json-value";
    }
    if (!s.is_object()) fail(ptr, "a schema must be an object or a boolean");
    for (const auto& [key, value] : s.items()) {
      if (!kHandled.count(key) && !kAnnotations.count(key))
        fail(ptr, "unsupported keyword '" + key + "'");
    }
    if (s.contains("$ref")) return visit_ref(s, ptr);
    if (s.contains("const")) return add_rule(hint, gbnf_literal(s["const"].dump()));
    if (s.contains("enum")) {
      const Json& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(ptr + "/enum", "must be a non-empty array");
      std::string body;
      for (const Json& v : e) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return add_rule(hint, body);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& alts = s[key];
      if (!alts.is_array() || alts.empty()) fail(ptr + "/" + key, "must be a non-empty array");
      for (const auto& [k, v] : s.items()) {
        if (k != key && kHandled.count(k) && k != "type") {
          fail(ptr, "'" + std::string(key) + "' next to '" + k + "' is not supported");
        }
      }
      std::string body;
      for (size_t i = 0; i < alts.size(); ++i) {
        const std::string p = ptr + "/" + key + "/" + std::to_string(i);
        body += (body.empty() ? "" : " | ") + visit(alts[i], p, hint + "-" + std::to_string(i));
      }
      return add_rule(hint, body);
    }
    if (s.contains("allOf")) {
      const Json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1 || s.size() > 1 + count_annotations(s)) {
        fail(ptr + "/allOf", "only a lone allOf with a single schema is supported");
      }
      return visit(all[0], ptr + "/allOf/0", hint);
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array()) {
        for (const Json& x : t) {
          if (!x.is_string()) fail(ptr + "/type", "must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(ptr + "/type", "must be a string or an array of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties") ||
               s.contains("required")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
               s.contains("maxItems")) {
      types.push_back("array");
    } else if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength") ||
               s.contains("format")) {
      types.push_back("string");
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
               s.contains("exclusiveMaximum")) {
      types.push_back("number");
    } else {
      return "json-value";
    }
    std::string body;
    for (const std::string& t : types) {
      std::string expr;
      if (t == "object") {
        expr = object_expr(s, ptr, hint);
      } else if (t == "array") {
        expr = array_expr(s, ptr, hint);
      } else if (t == "string") {
        expr = string_expr(s, ptr);
      } else if (t == "integer") {
        expr = integer_expr(s, ptr);
      } else if (t == "number") {
        expr = number_expr(s, ptr);
      } else if (t == "boolean") {
        expr = "json-boolean";
      } else if (t == "null") {
        expr = "json-null";
      } else {
        fail(ptr + "/type", "unknown type '" + t + "'");
      }
      body += (body.empty() ? "" : " | ") + expr;
    }
    return add_rule(hint, body);
  }

  static size_t count_annotations(const Json& s) {
    size_t n = 0;
    for (const auto& [k, v] : s.items()) n += kAnnotations.count(k);
    return n;
  }

  std::string visit_ref(const Json& s, const std::string& ptr) {
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && kHandled.count(k))
        fail(ptr, "'$ref' next to '" + k + "' is not supported");
    }
    const Json& r = s["$ref"];
    if (!r.is_string()) fail(ptr + "/$ref", "must be a string");
    const std::string ref = r.get<std::string>();
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    if (ref.empty() || ref[0] != '#')
      fail(ptr + "/$ref", "only local references ('#/...') are supported: '" + ref + "'");
    const Json* target = resolve(ref.substr(1));
    if (!target) fail(ptr + "/$ref", "reference '" + ref + "' points at nothing");
    // Reserve the name first: the target may refer back to itself.
    const std::string name = unique_name("ref" + ref.substr(1));
    ref_rules_.emplace(ref, name);
    const std::string body = visit(*target, ref.substr(1), name + "-body");
    rules_.emplace_back(name, body);
    return name;
  }

  // The value a JSON pointer ("/$defs/a~1b/0") names, or nullptr. The schema's objects keep
  // their text order and so find a key by linear search; a large $defs gets a hash index once,
  // so that many references into it cost no more than one each.
  const Json* resolve(const std::string& pointer) {
    if (!pointer.empty() && pointer[0] != '/') return nullptr;
    const Json* at = &root_;
    for (size_t start = 1; start <= pointer.size() && !pointer.empty();) {
      size_t end = pointer.find('/', start);
      if (end == std::string::npos) end = pointer.size();
      std::string token;
      for (size_t i = start; i < end; ++i) {
        if (pointer[i] != '~') {
          token += pointer[i];
        } else if (i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
          token += pointer[++i] == '0' ? '~' : '/';
        } else {
          return nullptr;
        }
      }
      start = end + 1;
      if (at->is_object()) {
        at = member(*at, token);
      } else if (at->is_array()) {
        const bool number = !token.empty() && token.size() <= 18 &&
                            token.find_first_not_of("0123456789") == std::string::npos &&
                            (token.size() == 1 || token[0] != '0');
        if (!number || std::stoull(token) >= at->size()) return nullptr;
        at = &(*at)[std::stoull(token)];
      } else {
        return nullptr;
      }
      if (!at) return nullptr;
    }
    return at;
  }

  const Json* member(const Json& object, const std::string& key) {
    constexpr size_t kIndexFrom = 16;
    if (object.size() < kIndexFrom) {
      const auto it = object.find(key);
      return it == object.end() ? nullptr : &*it;
    }
    auto [index, fresh] = member_index_.try_emplace(&object);
    if (fresh)
      for (const auto& [k, v] : object.items()) index->second.emplace(k, &v);
    const auto it = index->second.find(key);
    return it == index->second.end() ? nullptr : it->second;
  }

  std::string object_expr(const Json& s, const std::string& ptr, const std::string& hint) {
    static const Json kEmpty = Json::object();
    const Json& props = s.contains("properties") ? s["properties"] : kEmpty;
    if (!props.is_object()) fail(ptr + "/properties", "must be an object");
    std::vector<std::string> order;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(ptr + "/required", "must be an array of strings");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) fail(ptr + "/required", "must be an array of strings");
        if (required.insert(r.get<std::string>()).second) order.push_back(r.get<std::string>());
      }
    }
    // The schema's objects keep their text order, so finding a key in one is a linear search:
    // looked up once here rather than per property.
    std::map<std::string, const Json*> declared;
    for (const auto& [key, value] : props.items()) {
      declared.emplace(key, &value);
      if (!required.count(key)) order.push_back(key);
    }
    std::string extra;  // one additional member, or "" when none are allowed
    if (s.contains("additionalProperties")) {
      const Json& ap = s["additionalProperties"];
      if (!(ap.is_boolean() && !ap.get<bool>())) {
        const std::string value = visit(ap, ptr + "/additionalProperties", hint + "-additional");
        extra = add_rule(hint + "-additional-kv", "json-string ws \":\" ws " + value + " ws");
      }
    }
    // Member i as a rule: "key" ws ":" ws value ws.
    std::vector<std::string> members;
    for (const std::string& key : order) {
      const std::string p = ptr + "/properties/" + pointer_token(key);
      const auto it = declared.find(key);
      const std::string value =
          it != declared.end() ? visit(*it->second, p, hint + "-" + key) : "json-value";
      members.push_back(add_rule(hint + "-" + key + "-kv",
                                 gbnf_literal(Json(key).dump()) + " ws \":\" ws " + value + " ws"));
    }
    // tail[i]: members i.. after something was written (each present one comma-led);
    // head[i]: members i.. before anything was written.
    const size_t n = order.size();
    std::vector<std::string> tail(n + 1), head(n + 1);
    tail[n] = extra.empty() ? "" : "(\",\" ws " + extra + ")*";
    head[n] = extra.empty() ? "" : "(" + extra + " " + tail[n] + ")?";
    for (size_t i = n; i-- > 0;) {
      const std::string& m = members[i];
      const bool req = required.count(order[i]) > 0;
      const std::string t = req ? "\",\" ws " + m : "(\",\" ws " + m + ")?";
      tail[i] = tail[i + 1].empty() ? t : add_rule(hint + "-tail", t + " " + tail[i + 1]);
      const std::string first = m + (tail[i + 1].empty() ? "" : " " + tail[i + 1]);
      head[i] = add_rule(hint + "-head", req ? first : first + " | " + head[i + 1]);
    }
    return "\"{\" ws " + head[0] + " \"}\"";
  }

  std::string array_expr(const Json& s, const std::string& ptr, const std::string& hint) {
    const uint64_t min = s.contains("minItems") ? get_count(s, "minItems", ptr) : 0;
    std::optional<uint64_t> max;
    if (s.contains("maxItems")) max = get_count(s, "maxItems", ptr);
    if (max && *max < min) fail(ptr + "/maxItems", "is below minItems");
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      const Json& pi = s["prefixItems"];
      if (!pi.is_array()) fail(ptr + "/prefixItems", "must be an array");
      for (size_t i = 0; i < pi.size() && (!max || i < *max); ++i) {
        prefix.push_back(visit(pi[i], ptr + "/prefixItems/" + std::to_string(i),
                               hint + "-" + std::to_string(i)));
      }
    }
    std::string item = "json-value";
    bool more = true;
    if (s.contains("items")) {
      const Json& it = s["items"];
      if (it.is_boolean() && !it.get<bool>()) {
        more = false;
      } else if (it.is_array()) {
        fail(ptr + "/items",
             "an array of schemas (old tuple form) is not supported; use prefixItems");
      } else {
        item = visit(it, ptr + "/items", hint + "-item");
      }
    }
    // Every prefix item is written: stricter than the schema, never invalid.
    const uint64_t k = prefix.size();
    std::string body = "\"[\" ws";
    for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " \",\" ws " : " ") + prefix[i] + " ws";
    if (!more && min > k) fail(ptr + "/minItems", "needs more items than prefixItems allows");
    if (more && (!max || *max > k)) {
      const uint64_t lo = min > k ? min - k : 0;
      const std::optional<uint64_t> hi = max ? std::optional<uint64_t>(*max - k) : std::nullopt;
      if (k > 0) {
        body += " (\",\" ws " + item + " ws)" + repeat_suffix(lo, hi);
      } else if (lo == 0) {
        body += " (" + item + " ws (\",\" ws " + item + " ws)" +
                repeat_suffix(0, hi ? std::optional<uint64_t>(*hi - 1) : std::nullopt) + ")?";
      } else {
        body += " " + item + " ws (\",\" ws " + item + " ws)" +
                repeat_suffix(lo - 1, hi ? std::optional<uint64_t>(*hi - 1) : std::nullopt);
      }
    }
    return body + " \"]\"";
  }

  std::string string_expr(const Json& s, const std::string& ptr) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
      if (lengths || s.contains("format"))
        fail(ptr + "/pattern",
             "'pattern' with 'minLength', 'maxLength' or 'format' is not supported");
      if (!s["pattern"].is_string()) fail(ptr + "/pattern", "must be a string");
      return "\"\\\"\" " + regex_to_gbnf(s["pattern"].get<std::string>(), "#" + ptr + "/pattern") +
             " \"\\\"\"";
    }
    if (s.contains("format")) {
      if (lengths)
        fail(ptr + "/format", "'format' with 'minLength' or 'maxLength' is not supported");
      const Json& f = s["format"];
      const std::string date =
          R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))";
      const std::string time =
          R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";
      const std::string hex = "[0-9a-fA-F]";
      std::string body;
      if (f == "date") {
        body = date;
      } else if (f == "time") {
        body = time;
      } else if (f == "date-time") {
        body = date + " [Tt] " + time;
      } else if (f == "uuid") {
        body = hex + "{8} \"-\" " + hex + "{4} \"-\" " + hex + "{4} \"-\" " + hex + "{4} \"-\" " +
               hex + "{12}";
      } else {
        fail(ptr + "/format",
             "unsupported format " + f.dump() + " (supported: date, time, date-time, uuid)");
      }
      return "\"\\\"\" " + add_rule("format-" + f.get<std::string>(), body) + " \"\\\"\"";
    }
    const uint64_t min = s.contains("minLength") ? get_count(s, "minLength", ptr) : 0;
    std::optional<uint64_t> max;
    if (s.contains("maxLength")) max = get_count(s, "maxLength", ptr);
    if (max && *max < min) fail(ptr + "/maxLength", "is below minLength");
    if (min == 0 && !max) return "json-string";
    return "\"\\\"\" json-char" + repeat_suffix(min, max) + " \"\\\"\"";
  }

  // Bounds as integers: [lo, hi] with exclusive bounds moved inward. Number bounds are
  // supported when they are whole numbers.
  struct Bounds {
    std::optional<int64_t> lo, hi;
  };

  static Bounds bounds(const Json& s, const std::string& ptr, bool integer) {
    Bounds b;
    auto read = [&](const char* key, bool is_min, bool exclusive) {
      if (!s.contains(key)) return;
      const Json& v = s[key];
      if (v.is_boolean())
        fail(ptr + "/" + key, "boolean exclusive bounds (draft 4) are not supported");
      if (!v.is_number()) fail(ptr + "/" + key, "must be a number");
      double d = v.get<double>();
      if (!integer && (d != std::floor(d) || exclusive)) {
        fail(ptr + "/" + key, "for type number only whole-number, inclusive bounds are supported");
      }
      if (std::fabs(d) >= kIntLimit) return;
      d = is_min ? std::ceil(d) : std::floor(d);
      int64_t x = static_cast<int64_t>(d);
      if (exclusive && static_cast<double>(x) == v.get<double>()) x += is_min ? 1 : -1;
      std::optional<int64_t>& slot = is_min ? b.lo : b.hi;
      slot = slot ? (is_min ? std::max(*slot, x) : std::min(*slot, x)) : x;
    };
    read("minimum", true, false);
    read("exclusiveMinimum", true, true);
    read("maximum", false, false);
    read("exclusiveMaximum", false, true);
    if (b.lo && b.hi && *b.lo > *b.hi) fail(ptr, "the bounds leave no value");
    return b;
  }

  // Magnitudes >= a, up to the 15-digit limit.
  static std::string at_least(uint64_t a) {
    const std::string digits = std::to_string(a);
    std::string out = int_range_gbnf(
        a, static_cast<uint64_t>(std::pow(10.0, static_cast<double>(digits.size()))) - 1);
    if (digits.size() < 15)
      out = "(" + out + " | [1-9] [0-9]{" + std::to_string(digits.size()) + ",14})";
    return out;
  }

  // Integers in [lo, hi]; either side may be open.
  static std::string int_expr(const Bounds& b) {
    if (!b.lo && !b.hi) return "json-int";
    std::vector<std::string> alts;
    // Negative values -m with m >= 1.
    if (!b.lo || *b.lo < 0) {
      const uint64_t m_min = b.hi && *b.hi < 0 ? static_cast<uint64_t>(-*b.hi) : 1;
      if (b.lo) {
        alts.push_back("\"-\" " + int_range_gbnf(m_min, static_cast<uint64_t>(-*b.lo)));
      } else {
        alts.push_back("\"-\" " + at_least(m_min));
      }
    }
    if (!b.hi || *b.hi >= 0) {
      const uint64_t n_min = b.lo && *b.lo > 0 ? static_cast<uint64_t>(*b.lo) : 0;
      alts.push_back(b.hi ? int_range_gbnf(n_min, static_cast<uint64_t>(*b.hi)) : at_least(n_min));
    }
    std::string out;
    for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
    return "(" + out + ")";
  }

  std::string integer_expr(const Json& s, const std::string& ptr) {
    return add_rule("integer", int_expr(bounds(s, ptr, true)));
  }

  std::string number_expr(const Json& s, const std::string& ptr) {
    const Bounds b = bounds(s, ptr, false);
    if (!b.lo && !b.hi) return "json-number";
    // A whole part strictly inside the bounds takes any fraction; a whole part equal to a
    // bound takes only zeros on the side that would cross it.
    const std::string zero_frac = "(\".\" \"0\"{1,16})?";
    auto mags = [&](int64_t a, std::optional<int64_t> c, const std::string& sign) -> std::string {
      // Magnitudes in [a, c] (c open when absent), a >= 0.
      if (c && *c == a)
        return sign + int_range_gbnf(static_cast<uint64_t>(a), static_cast<uint64_t>(a)) + " " +
               zero_frac;
      std::string inner =
          c ? int_range_gbnf(static_cast<uint64_t>(a), static_cast<uint64_t>(*c - 1))
            : at_least(static_cast<uint64_t>(a));
      std::string out = sign + inner + " json-frac?";
      if (c)
        out += " | " + sign + int_range_gbnf(static_cast<uint64_t>(*c), static_cast<uint64_t>(*c)) +
               " " + zero_frac;
      return out;
    };
    std::vector<std::string> alts;
    // -x lies in [lo, hi] when x lies in [max(0, -hi), -lo]; a lower bound on x needs no
    // care for the fraction, since a fraction only makes x larger.
    if (!b.lo || *b.lo < 0) {
      std::optional<int64_t> c;
      if (b.lo) c = -*b.lo;
      alts.push_back(mags(b.hi && *b.hi < 0 ? -*b.hi : 0, c, "\"-\" "));
    }
    if (!b.hi || *b.hi >= 0) alts.push_back(mags(b.lo && *b.lo > 0 ? *b.lo : 0, b.hi, ""));
    std::string out;
    for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
    return add_rule("number", out);
  }

  const Json& root_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> by_body_;
  std::set<std::string> names_{"root",        "ws",           "json-char", "json-u4",
                               "json-string", "json-int",     "json-frac", "json-exp",
                               "json-number", "json-boolean", "json-null", "json-value",
                               "json-member", "json-object",  "json-array"};
  std::map<std::string, std::string> ref_rules_;
  std::unordered_map<const Json*, std::unordered_map<std::string_view, const Json*>> member_index_;
  std::map<std::string, int> next_number_;  // per rule-name base: the next suffix to try
  int depth_ = 0;                           // sub-schemas being visited
};

}  // namespace

std::string schema_to_gbnf(const nlohmann::ordered_json& schema) { return Converter(schema).run(); }

}  // namespace hostlm::grammar
