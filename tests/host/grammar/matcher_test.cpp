// The incremental matcher over a byte-per-token vocabulary: UTF-8 split across calls,
// rejection leaving the state alone, end tokens, and deep / long inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include "test_support.h"

namespace hostlm {
namespace {

using test::byte_vocab;

TEST(GrammarMatcher, Utf8SplitAcrossCalls) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= [é€] "😀")G");
  GrammarMatcher m(g, byte_vocab());
  const std::string text = "€😀";
  for (char c : text) ASSERT_TRUE(m.accept_bytes(std::string(1, c)));
  EXPECT_TRUE(m.can_end());
  GrammarMatcher m2(g, byte_vocab());
  EXPECT_TRUE(m2.accept_bytes("\xE2"));      // could still become €
  EXPECT_FALSE(m2.accept_bytes("\x83"));     // E2 83 .. is U+20C0..U+20FF, not €
  EXPECT_TRUE(m2.accept_bytes("\x82\xAC"));  // the rejection changed nothing
  EXPECT_FALSE(m2.can_end());
}

TEST(GrammarMatcher, InvalidUtf8IsRejected) {
  const Grammar g = Grammar::from_gbnf("root ::= .*");
  GrammarMatcher m(g, byte_vocab());
  EXPECT_FALSE(m.accept_bytes("\xC0\x80"));      // overlong
  EXPECT_FALSE(m.accept_bytes("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(m.accept_bytes("\x80"));
  EXPECT_FALSE(m.accept_bytes("\xF5\x80\x80\x80"));
  EXPECT_TRUE(m.accept_bytes("ok \xF0\x9F\x98\x80"));
  EXPECT_TRUE(m.can_end());
}

TEST(GrammarMatcher, RejectionKeepsState) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "ab" "c"*)G");
  GrammarMatcher m(g, byte_vocab());
  EXPECT_TRUE(m.can_accept_bytes("abc"));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("ax"));
  EXPECT_TRUE(m.accept_bytes("a"));
  EXPECT_FALSE(m.accept_bytes("bcx"));
  EXPECT_TRUE(m.accept_bytes("b"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.accept_bytes("ccc"));
  EXPECT_TRUE(m.can_end());
  m.reset();
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_bytes("ab"));
}

TEST(GrammarMatcher, EndTokenOnlyWhenComplete) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "a" "b"?)G");
  GrammarMatcher m(g, byte_vocab());
  TokenBitmask mask;
  m.allowed_tokens(mask);
  EXPECT_EQ(mask.count(), 1);
  EXPECT_TRUE(mask.test('a'));
  EXPECT_FALSE(m.accept_token(256));
  ASSERT_TRUE(m.accept_token('a'));
  m.allowed_tokens(mask);
  EXPECT_EQ(mask.count(), 2);
  EXPECT_TRUE(mask.test('b'));
  EXPECT_TRUE(mask.test(256));
  EXPECT_TRUE(m.accept_token(256));
  ASSERT_TRUE(m.accept_token('b'));
  m.allowed_tokens(mask);
  EXPECT_EQ(mask.count(), 1);
  EXPECT_TRUE(mask.test(256));
}

TEST(GrammarMatcher, AmbiguousGrammarKeepsAllParses) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= ("a" | "ab") ("bc" | "c") "d")G");
  EXPECT_TRUE(test::full_match(g, "abcd"));
  EXPECT_TRUE(test::full_match(g, "acd"));
  EXPECT_TRUE(test::full_match(g, "abbcd"));
  EXPECT_FALSE(test::full_match(g, "abd"));
}

TEST(GrammarMatcher, DeepNestingAndLongRuns) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "[" root "]" | "x"* )G");
  std::string text(2000, '[');
  text += std::string(5000, 'x') + std::string(2000, ']');
  EXPECT_TRUE(test::full_match(g, text));
  EXPECT_FALSE(test::full_match(g, text + "]"));
}

// Past a million pool nodes the matcher rebuilds its pool from the live stacks, here one parent
// chain as deep as the input; the rebuild recursed along it and overflowed the stack.
TEST(GrammarMatcher, PoolRebuildKeepsAMillionDeepStack) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "[" root "]" | "x" )G");
  GrammarMatcher m(g, byte_vocab());
  const int depth = (1 << 20) + 1000;
  const std::string open(4096, '[');
  for (int done = 0; done < depth; done += static_cast<int>(open.size()))
    ASSERT_TRUE(m.accept_bytes(std::string_view(open).substr(
        0, std::min<size_t>(open.size(), static_cast<size_t>(depth - done)))));
  ASSERT_TRUE(m.accept_bytes("x]]]"));
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("x"));
}

TEST(GrammarMatcher, CopyIsIndependent) {
  const Grammar g = Grammar::from_gbnf(R"G(root ::= "a" ("b" | "c"))G");
  GrammarMatcher m(g, byte_vocab());
  ASSERT_TRUE(m.accept_bytes("a"));
  GrammarMatcher copy = m;
  EXPECT_TRUE(copy.accept_bytes("b"));
  EXPECT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(copy.can_end());
}

TEST(GrammarMatcher, MultiByteTokensInMask) {
  // Tokens that end inside a UTF-8 sequence are allowed when it can still complete.
  std::vector<std::string> bytes = {"\xE2",     "\xE2\x82", "\xAC", "\xE2\x82\xAC",
                                    "\xE2\x83", "x",        ""};
  auto vocab = std::make_shared<const GrammarVocab>(bytes, std::vector<int32_t>{6});
  GrammarMatcher m(Grammar::from_gbnf(R"G(root ::= "€"+)G"), vocab);
  TokenBitmask mask;
  m.allowed_tokens(mask);
  EXPECT_TRUE(mask.test(0));
  EXPECT_TRUE(mask.test(1));
  EXPECT_FALSE(mask.test(2));
  EXPECT_TRUE(mask.test(3));
  EXPECT_FALSE(mask.test(4));
  EXPECT_FALSE(mask.test(5));
  EXPECT_FALSE(mask.test(6));
  ASSERT_TRUE(m.accept_token(1));
  m.allowed_tokens(mask);
  EXPECT_EQ(mask.count(), 1);
  EXPECT_TRUE(mask.test(2));
  ASSERT_TRUE(m.accept_token(2));
  m.allowed_tokens(mask);
  EXPECT_TRUE(mask.test(6));
  EXPECT_TRUE(mask.test(3));
}

TEST(GrammarMatcher, PartialSequencesInWideSets) {
  // In a set that holds every completion of a partial UTF-8 sequence the matcher forgets the
  // sequence's bits; overlong forms, surrogates, values past U+10FFFF and code points the set
  // leaves out must still be refused, whole or split byte by byte.
  const Grammar g = Grammar::from_gbnf(R"G(root ::= [^"\u4E2D]*)G");
  const std::pair<const char*, bool> cases[] = {
      {"\xE0\x80\x80", false},      // overlong U+0000
      {"\xE0\x9F\xBF", false},      // overlong U+07FF
      {"\xE0\xA0\x80", true},       // U+0800
      {"\xED\x9F\xBF", true},       // U+D7FF
      {"\xED\xA0\x80", false},      // surrogate U+D800
      {"\xED\xBF\xBF", false},      // surrogate U+DFFF
      {"\xEE\x80\x80", true},       // U+E000
      {"\xEF\xBF\xBF", true},       // U+FFFF
      {"\xE4\xB8\xAD", false},      // U+4E2D, left out of the set
      {"\xE4\xB8\xAC", true},       // U+4E2C
      {"\xF0\x8F\xBF\xBF", false},  // overlong U+FFFF
      {"\xF0\x90\x80\x80", true},   // U+10000
      {"\xF4\x8F\xBF\xBF", true},   // U+10FFFF
      {"\xF4\x90\x80\x80", false},  // past U+10FFFF
  };
  auto hex = [](std::string_view text) {
    std::string out;
    char buf[4];
    for (unsigned char c : text) {
      std::snprintf(buf, sizeof buf, "%02X ", c);
      out += buf;
    }
    return out;
  };
  for (const auto& [text, valid] : cases) {
    GrammarMatcher whole(g, byte_vocab());
    EXPECT_EQ(whole.accept_bytes(text), valid) << hex(text);
    GrammarMatcher split(g, byte_vocab());
    ASSERT_TRUE(split.accept_bytes("a\xC3\xA9"));  // something before, as in a string
    bool ok = true;
    for (const char* c = text; *c != '\0' && ok; ++c) ok = split.accept_bytes(std::string(1, *c));
    EXPECT_EQ(ok, valid) << hex(text);
    if (ok) {
      EXPECT_TRUE(split.can_end());
    }
  }
}

}  // namespace
}  // namespace hostlm
