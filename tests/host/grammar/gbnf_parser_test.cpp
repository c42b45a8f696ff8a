// GBNF parsing: llama.cpp-style example grammars compile and match what they should;
// malformed grammars fail with the line:column of the fault.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "hostlm/error.h"
#include "test_support.h"

namespace hostlm {
namespace {

using test::full_match;

const char* kJson = R"G(
# A JSON grammar in the style of llama.cpp's grammars/json.gbnf.
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

ws ::= | " " | "\n" [ \t]{0,20}
)G";

const char* kArithmetic = R"G(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)G";

const char* kList = R"G(
root ::= item+
# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)G";

const char* kChess = R"G(
root   ::= (
    # the first move pair, then more numbered pairs
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move   ::= (pawn | nonpawn | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBRQK] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)G";

TEST(GbnfParser, JsonExample) {
  const Grammar g = Grammar::from_gbnf(kJson);
  EXPECT_TRUE(full_match(g, R"G({"a": [1, 2.5e3, {"b": null}], "c": "x\ny\u00e9"})G"));
  EXPECT_TRUE(full_match(g, "{}"));
  EXPECT_TRUE(full_match(g, "{\n  \"k\": true\n}"));
  EXPECT_FALSE(full_match(g, R"G({"a": })G"));
  EXPECT_FALSE(full_match(g, R"G([1, 2])G"));  // root is an object
  EXPECT_FALSE(full_match(g, R"G({"a": 1,})G"));
  EXPECT_FALSE(full_match(g, R"G({"a": 01x})G"));
  EXPECT_TRUE(test::prefix_ok(g, R"G({"a": [1, )G"));
}

TEST(GbnfParser, ArithmeticExample) {
  const Grammar g = Grammar::from_gbnf(kArithmetic);
  EXPECT_TRUE(full_match(g, "a+b*(c-1)=x\n"));
  EXPECT_TRUE(full_match(g, "x = 2\n(y) =z\n"));
  EXPECT_FALSE(full_match(g, "a+=x\n"));
  EXPECT_FALSE(full_match(g, "a+b"));
}

TEST(GbnfParser, ListExample) {
  const Grammar g = Grammar::from_gbnf(kList);
  EXPECT_TRUE(full_match(g, "- one\n- two words\n- dé€😀\n"));
  EXPECT_FALSE(full_match(g, "- \n"));
  EXPECT_FALSE(full_match(g, "- a\u2028b\n"));
  EXPECT_FALSE(full_match(g, "* a\n"));
}

TEST(GbnfParser, ChessExample) {
  const Grammar g = Grammar::from_gbnf(kChess);
  EXPECT_TRUE(full_match(g, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. O-O exd4+\n"));
  EXPECT_FALSE(full_match(g, "1. e4 e5\n"));  // needs at least one more numbered pair
  EXPECT_FALSE(full_match(g, "1. e9 e5\n2. Nf3 Nc6\n"));
}

TEST(GbnfParser, Repetitions) {
  const Grammar g =
      Grammar::from_gbnf(R"G(root ::= "a"{2} "b"{1,3} "c"{2,} "d"? "e"{0,2} ("xy"){1})G");
  EXPECT_TRUE(full_match(g, "aabccxy"));
  EXPECT_TRUE(full_match(g, "aabbbcccccdeexy"));
  EXPECT_FALSE(full_match(g, "abccxy"));
  EXPECT_FALSE(full_match(g, "aabbbbccxy"));
  EXPECT_FALSE(full_match(g, "aabcxy"));
  EXPECT_FALSE(full_match(g, "aabcceeexy"));
  EXPECT_FALSE(full_match(g, "aabccx"));
}

TEST(GbnfParser, EscapesAndClasses) {
  const Grammar g =
      Grammar::from_gbnf(R"G(root ::= "\x41\u00e9\U0001F600\t\"\\" [^a-c\]] . [\u4e00-\u9fff]+)G");
  EXPECT_TRUE(full_match(g, "Aé😀\t\"\\dz中文"));
  EXPECT_FALSE(full_match(g, "Aé😀\t\"\\bz中"));
  EXPECT_FALSE(full_match(g, "Aé😀\t\"\\]z中"));
  EXPECT_FALSE(full_match(g, "Aé😀\t\"\\dzx"));
}

TEST(GbnfParser, OtherStartRuleAndComments) {
  const Grammar g =
      Grammar::from_gbnf("# leading comment\nstart ::= \"x\" # trailing\n  | \"y\"\n", "start");
  EXPECT_TRUE(full_match(g, "x"));
  EXPECT_TRUE(full_match(g, "y"));
}

TEST(GbnfParser, EmptyAlternativesAndLiterals) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "a" ( | "b" ) "" "c")G");
  EXPECT_TRUE(full_match(g, "ac"));
  EXPECT_TRUE(full_match(g, "abc"));
}

// The error message for `text`, or "" when it parses.
std::string error_of(std::string_view text) {
  try {
    Grammar::from_gbnf(text);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(GbnfParser, Errors) {
  EXPECT_EQ(error_of(""), "GBNF 1:1: empty grammar (no rules)");
  EXPECT_EQ(error_of("  # only a comment\n"), "GBNF 2:1: empty grammar (no rules)");
  EXPECT_EQ(error_of("root ::= \"a\" foo\n"), "GBNF 1:14: undefined rule 'foo'");
  EXPECT_EQ(error_of("root ::= \"a\nx ::= \"b\""), "GBNF 2:9: unterminated string literal");
  EXPECT_EQ(error_of("root ::= \"a\" [a-z\n"), "GBNF 1:14: unterminated character class");
  EXPECT_EQ(error_of("root ::= \"a\"{3,1}"), "GBNF 1:13: bad repetition: maximum below minimum");
  EXPECT_EQ(error_of("root ::= \"a\"{x}"), "GBNF 1:13: bad repetition: expected a number");
  EXPECT_EQ(error_of("root ::= \"a\"{2"), "GBNF 1:13: bad repetition: expected '}'");
  EXPECT_EQ(error_of("root ::= * \"a\""), "GBNF 1:10: bad repetition: '*' has nothing to repeat");
  EXPECT_EQ(error_of("other ::= \"a\""), "GBNF: no rule named 'root' (the start rule)");
  EXPECT_EQ(error_of("root \"a\""), "GBNF 1:6: expected '::=' after rule name 'root'");
  EXPECT_EQ(error_of("root ::= (\"a\" | \"b\""), "GBNF 1:10: unclosed '('");
  EXPECT_EQ(error_of("root ::= \"a\" )"), "GBNF 1:14: unmatched ')'");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "GBNF 1:11: unknown escape '\\q'");
  EXPECT_EQ(error_of("root ::= [z-a]"), "GBNF 1:11: character range is reversed");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "GBNF 2:1: rule 'root' is defined twice");
  EXPECT_EQ(error_of("root ::= \"\\x4\""), "GBNF 1:11: escape needs 2 hex digits");
}

TEST(GbnfParser, LeftRecursionIsRefused) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+"),
            "GBNF 2:1: rule 'expr' is left-recursive (it can reach itself before consuming any "
            "text); rewrite it with repetition, e.g. a ::= b (\"+\" b)*");
  // Indirect, through a nullable prefix.
  EXPECT_NE(
      error_of("root ::= a\na ::= b? c \"x\"\nc ::= a | \"y\"\nb ::= \"z\"").find("left-recursive"),
      std::string::npos);
  // A star over something that can be empty would loop the same way.
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left recursion through a group"),
            std::string::npos);
  // Right recursion is fine.
  const Grammar g = Grammar::from_gbnf("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(full_match(g, "((x))"));
  EXPECT_FALSE(full_match(g, "((x)"));
}

}  // namespace
}  // namespace hostlm

namespace hostlm {
namespace {

std::string gbnf_error(const std::string& text) {
  try {
    (void)Grammar::from_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Found by fuzz_grammar in CI: a repetition of an empty literal read past the sequence.
TEST(GbnfParser, RepeatedEmptyLiteralIsEmpty) {
  for (const char* g : {R"(root ::= "a" ""? "b")", R"(root ::= "a" ""* "b")",
                        R"(root ::= "a" ""{3} "b")", R"(root ::= "a" ("" ""+)? "b")"}) {
    EXPECT_TRUE(full_match(Grammar::from_gbnf(g), "ab")) << g;
    EXPECT_FALSE(full_match(Grammar::from_gbnf(g), "a")) << g;
  }
}

// Grammars can come from clients: deep nesting is an error, not a stack overflow.
TEST(GbnfParser, DeepNestingIsAnError) {
  const auto nested = [](int n) {
    return "root ::= " + std::string(n, '(') + "\"a\"" + std::string(n, ')');
  };
  EXPECT_TRUE(full_match(Grammar::from_gbnf(nested(200)), "a"));
  EXPECT_EQ(gbnf_error(nested(300)), "GBNF 1:266: nested deeper than 256 levels");
  EXPECT_NE(gbnf_error(nested(200000)).find("nested deeper than 256 levels"), std::string::npos);
}

// Every rule records its line and column; finding them used to rescan the text from the top,
// so 20,000 rules took tens of seconds.
TEST(GbnfParser, ManyRulesCompileInLinearTime) {
  std::string text;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    text += "r" + std::to_string(i) + " ::= \"x\" r" + std::to_string(i + 1) + "\n";
  text += "r" + std::to_string(n) + " ::= \"y\"\nroot ::= r0\n";
  const auto start = std::chrono::steady_clock::now();
  const Grammar g = Grammar::from_gbnf(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(full_match(g, std::string(n, 'x') + "y"));
  EXPECT_LT(seconds, 5.0);
  // Positions are still exact far into the text.
  EXPECT_EQ(gbnf_error(text + "bad ::= ( \"z\"\n"),
            "GBNF " + std::to_string(n + 3) + ":9: unclosed '('");
}

}  // namespace
}  // namespace hostlm
