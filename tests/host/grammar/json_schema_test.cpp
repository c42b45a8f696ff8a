// JSON Schema -> grammar: accepted and rejected documents per keyword, and clear errors for
// what is not supported.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "hostlm/error.h"
#include "test_support.h"

namespace hostlm {
namespace {

using test::full_match;

Grammar schema(const char* text) { return Grammar::from_json_schema(std::string_view(text)); }

std::string schema_error(const char* text) {
  try {
    Grammar::from_json_schema(std::string_view(text));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchema, ObjectPropertiesInOrder) {
  const Grammar g =
      schema(R"G({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},
      "c":{"type":"boolean"}},"required":["a","b"]})G");
  EXPECT_TRUE(full_match(g, R"G({"a":"x","b":1})G"));
  EXPECT_TRUE(full_match(g, R"G({ "a": "x", "b": -12, "c": true })G"));
  EXPECT_TRUE(full_match(g, "{\n  \"a\": \"x\",\n  \"b\": 0\n}"));
  EXPECT_FALSE(full_match(g, R"G({"b":1,"a":"x"})G"));  // required in listed order
  EXPECT_FALSE(full_match(g, R"G({"a":"x"})G"));
  EXPECT_FALSE(full_match(g, R"G({"a":"x","b":1,"d":2})G"));
  EXPECT_FALSE(full_match(g, R"G({"a":"x","b":1.5})G"));
  EXPECT_FALSE(full_match(g, "{\"a\":\"x\",\"b\":1" + std::string(60, ' ') + "}"));  // bounded ws
}

TEST(JsonSchema, OptionalOnlyAndAdditional) {
  const Grammar g = schema(R"G({"properties":{"x":{"type":"null"},"y":{"type":"number"}}})G");
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_TRUE(full_match(g, R"G({"y":2.5e-3})G"));
  EXPECT_TRUE(full_match(g, R"G({"x":null,"y":-0.5})G"));
  EXPECT_FALSE(full_match(g, R"G({,"y":1})G"));
  EXPECT_FALSE(full_match(g, R"G({"y":1,"x":null})G"));
  const Grammar extra =
      schema(R"G({"properties":{"x":{"type":"null"}},"additionalProperties":{"type":"integer"}})G");
  EXPECT_TRUE(full_match(extra, R"G({"x":null,"k":1,"j":2})G"));
  EXPECT_TRUE(full_match(extra, R"G({"k":1})G"));
  EXPECT_FALSE(full_match(extra, R"G({"k":"s"})G"));
  const Grammar any = schema(R"G({"type":"object","additionalProperties":true})G");
  EXPECT_TRUE(full_match(any, R"G({"k":[1,{"z":"q"}],"j":false})G"));
}

TEST(JsonSchema, EnumConstAnyOf) {
  const Grammar g =
      schema(R"G({"anyOf":[{"enum":["red","green",3,null]},{"const":{"a":[1,"x\"y"]}}]})G");
  EXPECT_TRUE(full_match(g, R"G("red")G"));
  EXPECT_TRUE(full_match(g, "3"));
  EXPECT_TRUE(full_match(g, "null"));
  EXPECT_TRUE(full_match(g, R"G({"a":[1,"x\"y"]})G"));
  EXPECT_FALSE(full_match(g, R"G("blue")G"));
  const Grammar types = schema(R"G({"type":["string","null"]})G");
  EXPECT_TRUE(full_match(types, "null"));
  EXPECT_TRUE(full_match(types, R"G("é\n")G"));
  EXPECT_FALSE(full_match(types, "1"));
}

TEST(JsonSchema, Arrays) {
  const Grammar g =
      schema(R"G({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})G");
  EXPECT_TRUE(full_match(g, "[1,2]"));
  EXPECT_TRUE(full_match(g, "[ 1, 2, 3 ]"));
  EXPECT_FALSE(full_match(g, "[1]"));
  EXPECT_FALSE(full_match(g, "[1,2,3,4]"));
  EXPECT_FALSE(full_match(g, "[1,\"a\"]"));
  const Grammar open = schema(R"G({"type":"array"})G");
  EXPECT_TRUE(full_match(open, "[]"));
  EXPECT_TRUE(full_match(open, R"G([1,"a",[],{}])G"));
  const Grammar tuple =
      schema(R"G({"prefixItems":[{"type":"string"},{"type":"boolean"}],"items":false})G");
  EXPECT_TRUE(full_match(tuple, R"G(["a",true])G"));
  EXPECT_FALSE(full_match(tuple, R"G(["a",true,1])G"));
  EXPECT_FALSE(full_match(tuple, R"G([true,"a"])G"));
}

TEST(JsonSchema, StringLengthsAndFormats) {
  const Grammar g = schema(R"G({"type":"string","minLength":2,"maxLength":3})G");
  EXPECT_TRUE(full_match(g, R"G("ab")G"));
  EXPECT_TRUE(full_match(g, R"G("a\"€")G"));
  EXPECT_FALSE(full_match(g, R"G("a")G"));
  EXPECT_FALSE(full_match(g, R"G("abcd")G"));
  const Grammar date = schema(R"G({"type":"string","format":"date-time"})G");
  EXPECT_TRUE(full_match(date, R"G("2024-02-29T13:05:00Z")G"));
  EXPECT_TRUE(full_match(date, R"G("2024-02-29T13:05:00.123+05:30")G"));
  EXPECT_FALSE(full_match(date, R"G("2024-13-01T00:00:00Z")G"));
  const Grammar uuid = schema(R"G({"format":"uuid"})G");
  EXPECT_TRUE(full_match(uuid, R"G("123e4567-e89b-12d3-a456-426614174000")G"));
  EXPECT_FALSE(full_match(uuid, R"G("123e4567-e89b-12d3-a456")G"));
}

TEST(JsonSchema, Patterns) {
  const Grammar g = schema(R"G({"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}(x|yz)?$"})G");
  EXPECT_TRUE(full_match(g, R"G("AB-123")G"));
  EXPECT_TRUE(full_match(g, R"G("AB-1234yz")G"));
  EXPECT_FALSE(full_match(g, R"G("AB-12")G"));
  EXPECT_FALSE(full_match(g, R"G("ab-123")G"));
  EXPECT_FALSE(full_match(g, R"G("AB-123y")G"));
  const Grammar unanchored = schema(R"G({"type":"string","pattern":"a\"b.c"})G");
  EXPECT_TRUE(full_match(unanchored, R"G("xx a\"bzc yy")G"));
  EXPECT_FALSE(full_match(unanchored, R"G("a\"b\nc")G"));  // . excludes newline
  EXPECT_NE(schema_error(R"G({"type":"string","pattern":"(?=a)"})G").find("lookarounds"),
            std::string::npos);
}

TEST(JsonSchema, IntegerRanges) {
  const Grammar g = schema(R"G({"type":"integer","minimum":-15,"maximum":207})G");
  for (int i = -40; i <= 400; ++i) {
    EXPECT_EQ(full_match(g, std::to_string(i)), i >= -15 && i <= 207) << i;
  }
  EXPECT_FALSE(full_match(g, "007"));
  EXPECT_FALSE(full_match(g, "-0"));
  const Grammar lo = schema(R"G({"type":"integer","exclusiveMinimum":9})G");
  EXPECT_FALSE(full_match(lo, "9"));
  EXPECT_TRUE(full_match(lo, "10"));
  EXPECT_TRUE(full_match(lo, "123456"));
  EXPECT_FALSE(full_match(lo, "-10"));
  const Grammar hi = schema(R"G({"type":"integer","maximum":-3})G");
  EXPECT_TRUE(full_match(hi, "-3"));
  EXPECT_TRUE(full_match(hi, "-1000"));
  EXPECT_FALSE(full_match(hi, "-2"));
  EXPECT_FALSE(full_match(hi, "5"));
}

TEST(JsonSchema, NumberRanges) {
  const Grammar g = schema(R"G({"type":"number","minimum":-2,"maximum":3})G");
  for (const char* ok : {"-2", "-2.0", "-1.99", "0", "2.5", "3", "3.000", "-0.5"})
    EXPECT_TRUE(full_match(g, ok)) << ok;
  for (const char* bad : {"-2.01", "3.01", "4", "-3", "1e3"})
    EXPECT_FALSE(full_match(g, bad)) << bad;
  EXPECT_NE(schema_error(R"G({"type":"number","minimum":0.5})G").find("minimum"),
            std::string::npos);
}

TEST(JsonSchema, RecursiveRefs) {
  const Grammar g =
      schema(R"G({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})G");
  EXPECT_TRUE(full_match(g, R"G({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})G"));
  EXPECT_FALSE(full_match(g, R"G({"v":1,"kids":[{"w":2}]})G"));
  const Grammar self =
      schema(R"G({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})G");
  EXPECT_TRUE(full_match(self, "[1,[2,[]],3]"));
}

TEST(JsonSchema, Errors) {
  EXPECT_EQ(schema_error(
                R"G({"type":"object","properties":{"a":{"type":"string","uniqueItems":true}}})G"),
            "JSON Schema at '#/properties/a': unsupported keyword 'uniqueItems'");
  EXPECT_EQ(schema_error(R"G({"not":{}})G"), "JSON Schema at '#': unsupported keyword 'not'");
  EXPECT_EQ(schema_error(R"G({"$ref":"#/$defs/missing"})G"),
            "JSON Schema at '#/$ref': reference '#/$defs/missing' points at nothing");
  EXPECT_EQ(
      schema_error(R"G({"$ref":"http://x/y.json"})G"),
      "JSON Schema at '#/$ref': only local references ('#/...') are supported: 'http://x/y.json'");
  EXPECT_EQ(schema_error(R"G({"type":"strin"})G"), "JSON Schema at '#/type': unknown type 'strin'");
  EXPECT_EQ(schema_error(R"G({"type":"string","format":"email"})G"),
            "JSON Schema at '#/format': unsupported format \"email\" (supported: date, time, "
            "date-time, uuid)");
  EXPECT_EQ(schema_error(R"G({"items":{"minItems":-1}})G"),
            "JSON Schema at '#/items/minItems': must be a non-negative integer");
  EXPECT_NE(schema_error("{").find("not valid JSON"), std::string::npos);
}

TEST(JsonSchema, JsonObjectGrammar) {
  const Grammar g = Grammar::json_object();
  EXPECT_TRUE(full_match(g, R"G({"a":[1,true,null,{"b":"c"}],"d":-1.5e+10})G"));
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_FALSE(full_match(g, "[]"));
  EXPECT_FALSE(full_match(g, R"G({"a":"\ud800"})G"));  // a lone surrogate escape is not JSON text
  EXPECT_FALSE(full_match(g, "{\"a\":\"\x01\"}"));
}

TEST(JsonSchema, NlohmannOverloadSortsKeys) {
  const auto s = nlohmann::json::parse(
      R"G({"properties":{"b":{"const":1},"a":{"const":2}},"required":["b","a"]})G");
  const Grammar g = Grammar::from_json_schema(s);
  EXPECT_TRUE(full_match(g, R"G({"b":1,"a":2})G"));
}

}  // namespace
}  // namespace hostlm

namespace hostlm {
namespace {

// Schemas come from clients (Ollama's format, OpenAI's response_format): deep nesting is an
// error, not a stack overflow, in the schema, in its JSON and in a pattern.
TEST(JsonSchema, DeepNestingIsAnError) {
  const auto items = [](int n) {
    std::string s = R"({"type":"string"})";
    for (int i = 0; i < n; ++i) s = R"({"type":"array","items":)" + s + "}";
    return s;
  };
  EXPECT_TRUE(
      full_match(schema(items(20).c_str()), std::string(20, '[') + "\"a\"" + std::string(20, ']')));
  const std::string deep = schema_error(items(300).c_str());
  EXPECT_NE(deep.find("nested deeper than 256 levels"), std::string::npos) << deep;
  EXPECT_EQ(deep.find("JSON Schema at '#/items/items"), 0u) << deep;
  EXPECT_EQ(schema_error((std::string(100000, '[') + std::string(100000, ']')).c_str()),
            "JSON Schema: nested deeper than 512 levels");
  EXPECT_THROW(Grammar::from_json_schema(nlohmann::json::parse(items(2000))), Error);
  const std::string pattern = R"({"type":"string","pattern":")" + std::string(5000, '(') + "a" +
                              std::string(5000, ')') + "\"}";
  const std::string pattern_error = schema_error(pattern.c_str());
  EXPECT_NE(pattern_error.find("nested deeper than 256 levels"), std::string::npos)
      << pattern_error;
}

// An object of n properties names about 3n rules; numbering each name from 2 again, and finding
// each property by a linear search of the schema's ordered object, made 4,000 properties take
// 2.3 s and 16,000 43.6 s (release build).
TEST(JsonSchema, ManyPropertiesConvertInLinearTime) {
  std::string props, required;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const std::string key = "\"p" + std::to_string(i) + "\"";
    props += (i ? "," : "") + key + R"(:{"type":"integer"})";
    if (i % 2 == 0) required += std::string(required.empty() ? "" : ",") + key;
  }
  const std::string text =
      R"({"type":"object","properties":{)" + props + "},\"required\":[" + required + "]}";
  const auto start = std::chrono::steady_clock::now();
  const Grammar g = schema(text.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string doc = "{";
  for (int i = 0; i < n; i += 2)
    doc += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":1";
  EXPECT_TRUE(full_match(g, doc + "}"));
  EXPECT_FALSE(full_match(g, "{}"));
  EXPECT_LT(seconds, 2.0);
}

// Every property a $ref into a large $defs: each reference was found by a linear search of
// $defs' members (the schema keeps its text order).
TEST(JsonSchema, ManyReferencesIntoLargeDefsResolveInLinearTime) {
  std::string defs, props;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    defs += (i ? "," : "") + ("\"d" + id + "\":{\"const\":" + id + "}");
    props += (i ? "," : "") + ("\"p" + id + "\":{\"$ref\":\"#/$defs/d" + id + "\"}");
  }
  const std::string text = R"({"type":"object","$defs":{)" + defs + R"(},"properties":{)" + props +
                           R"(},"required":["p0","p3999"]})";
  const auto start = std::chrono::steady_clock::now();
  const Grammar g = schema(text.c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(full_match(g, R"({"p0":0,"p3999":3999})"));
  EXPECT_FALSE(full_match(g, R"({"p0":0,"p3999":3998})"));
  EXPECT_LT(seconds, 2.0);
}

// JSON pointers as RFC 6901 reads them: ~1 is '/', ~0 is '~', array members by index; a
// pointer that names nothing is an error naming the reference.
TEST(JsonSchema, ReferencePointersFollowRfc6901) {
  const Grammar g = schema(R"({"$defs":{"a/b":{"const":1},"m~n":{"const":2},
      "list":[{"const":3},{"const":4}]},
      "type":"array","prefixItems":[{"$ref":"#/$defs/a~1b"},{"$ref":"#/$defs/m~0n"},
      {"$ref":"#/$defs/list/1"}],"items":false,"minItems":3})");
  EXPECT_TRUE(full_match(g, "[1,2,4]"));
  EXPECT_FALSE(full_match(g, "[1,2,3]"));
  for (const char* ref : {"#/$defs/list/2", "#/$defs/list/01", "#/$defs/list/-", "#/$defs/m~2n",
                          "#/$defs/missing", "#$defs"}) {
    const std::string text =
        std::string(R"({"$defs":{"list":[1],"m~n":{}},"$ref":")") + ref + "\"}";
    try {
      schema(text.c_str());
      ADD_FAILURE() << ref << " resolved";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("points at nothing"), std::string::npos) << e.what();
    }
  }
}

// So ambiguous a grammar that every position reaches every other (a long run of optional
// elements) ends in an error at once, instead of a stack overflow (before the expansion took a
// work list) or gigabytes and minutes of parse tables.
TEST(JsonSchema, HopelesslyAmbiguousGrammarsFailFast) {
  for (const char* gbnf : {R"(root ::= "a"?{100000})", R"(root ::= "a"?{10000} "b")"}) {
    const auto start = std::chrono::steady_clock::now();
    std::string error = "(no error)";
    try {
      GrammarMatcher m(Grammar::from_gbnf(gbnf), test::byte_vocab());
      for (int i = 0; i < 64; ++i) m.accept_bytes("a");
    } catch (const Error& e) {
      error = e.what();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(error.find("grammar: too ambiguous to match"), 0u) << gbnf << ": " << error;
    EXPECT_LT(seconds, 30.0) << gbnf;  // about 1 s in a release build
  }
}

}  // namespace
}  // namespace hostlm
