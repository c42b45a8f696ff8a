// parse_input_json against nlohmann's own ordered parse: the same values (repeated keys keep
// their first place and last value, in small objects and in the hashed large ones), the same
// parse errors, a bound on nesting, and time linear in the number of keys.
#include "hostlm/json_input.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace hostlm {
namespace {

using Json = nlohmann::ordered_json;

// An object with `n` keys where every third key repeats an earlier one.
std::string object_with_repeats(int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i)
    s += (i ? "," : "") + std::string("\"k") + std::to_string(i % 3 == 2 ? i / 2 : i) +
         "\":" + std::to_string(i);
  return s + "}";
}

TEST(JsonInput, SameValuesAsTheOrderedParse) {
  const std::vector<std::string> texts = {
      "null",
      "true",
      "-0",
      "12",
      "18446744073709551615",
      "-9223372036854775808",
      "1.5e300",
      R"("a\u00e9\ud83d\ude00\n")",
      "[]",
      "{}",
      R"([1,[2,[3,{"a":[{}]}]],"x"])",
      R"({"a":1,"b":2,"a":3,"c":{"x":1,"x":[1,2]}})",
      R"({"z":{"y":{"x":null}},"a":[true,false]})",
      object_with_repeats(10),
      object_with_repeats(17),
      object_with_repeats(40),
      object_with_repeats(1000),
      "[" + object_with_repeats(100) + "," + object_with_repeats(5) + "]",
      " \n\t{ \"spaced\" : [ 1 , 2 ] } \n"};
  for (const std::string& text : texts) {
    const Json ours = parse_input_json(text);
    const Json theirs = Json::parse(text);
    EXPECT_EQ(ours, theirs) << text.substr(0, 80);
    EXPECT_EQ(ours.dump(), theirs.dump()) << text.substr(0, 80);  // key order too
  }
}

TEST(JsonInput, SameParseErrors) {
  for (const std::string text :
       {"", "{", R"({"a":})", "[1,]", "{\"a\" 1}", "[1] 2", "nul", "\"\\x\"", "{\"a\":1,}"}) {
    std::string ours = "(no error)", theirs = "(no error)";
    try {
      (void)parse_input_json(text);
    } catch (const nlohmann::json::parse_error& e) {
      ours = e.what();
    }
    try {
      const Json value = Json::parse(text);
      theirs = value.dump();  // not reached: every text here is malformed
    } catch (const nlohmann::json::parse_error& e) {
      theirs = e.what();
    }
    EXPECT_EQ(ours, theirs) << text;
    EXPECT_NE(ours, "(no error)") << text;
    EXPECT_TRUE(parse_input_json_or_discarded(text).is_discarded()) << text;
  }
}

TEST(JsonInput, NestingIsBounded) {
  const auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_TRUE(parse_input_json(nested(kMaxInputJsonDepth)).is_array());
  EXPECT_THROW((void)parse_input_json(nested(kMaxInputJsonDepth + 1)), JsonTooDeep);
  try {
    (void)parse_input_json(nested(200000));
    FAIL() << "no error";
  } catch (const JsonTooDeep& e) {
    EXPECT_STREQ(e.what(), "nested deeper than 512 levels");
  }
  EXPECT_THROW((void)parse_input_json(R"({"a":{"b":[1]}})", 2), JsonTooDeep);
  EXPECT_EQ(parse_input_json(R"({"a":{"b":1}})", 2)["a"]["b"], 1);
  EXPECT_TRUE(parse_input_json_or_discarded(nested(600)).is_discarded());
}

// nlohmann's ordered parse searches an object's keys linearly on every insert: 64K keys took
// 4.9 s and 256K 78 s (release, measured 2026-12-05); here 100K take a fraction of a second.
TEST(JsonInput, ManyKeysParseInLinearTime) {
  std::string text = "{";
  for (int i = 0; i < 100000; ++i)
    text += (i ? "," : "") + std::string("\"key") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  const auto start = std::chrono::steady_clock::now();
  const Json value = parse_input_json(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(value.size(), 100000u);
  EXPECT_EQ(value.begin().key(), "key0");
  EXPECT_EQ(value["key99999"], 99999);
  EXPECT_LT(seconds, 3.0);
}

}  // namespace
}  // namespace hostlm
