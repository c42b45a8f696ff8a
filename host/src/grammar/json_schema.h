// JSON Schema -> GBNF text, and the GBNF building blocks it shares with the JSON grammar.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hostlm::grammar {

std::string schema_to_gbnf(const nlohmann::ordered_json& schema);
std::string json_object_gbnf();

// The shared rules: ws, json-char, json-string, json-int, json-number, json-value, ...
std::string json_base_rules();

// GBNF text for a literal matching exactly `text` (UTF-8).
std::string gbnf_literal(std::string_view text);
// GBNF for one code point inside a [...] class.
std::string gbnf_class_char(uint32_t cp);

// GBNF expression matching the JSON string content (between the quotes, JSON-escaped)
// whose decoded text matches an ECMAScript `pattern` (search semantics: unanchored unless
// ^ / $). `where` names the schema location in errors.
std::string regex_to_gbnf(std::string_view pattern, const std::string& where);

// GBNF expression for the decimal integers in [lo, hi], 0 <= lo <= hi, no leading zeros.
std::string int_range_gbnf(uint64_t lo, uint64_t hi);

}  // namespace hostlm::grammar
