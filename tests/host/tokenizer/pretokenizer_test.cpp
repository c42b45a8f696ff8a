// The pre-tokenizer regexes: the qwen35 pattern lets letters absorb combining marks (and keeps
// marks out of punctuation runs), unlike the Qwen2/Qwen3 pattern (spec/qwen35.md 5.2).
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include "hostlm/error.h"
#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm::test {
namespace {

std::vector<std::string> pieces(const std::string& pre, const std::string& text) {
  const tok::PreTokenizer p({*builtin_pretokenizer_regex(pre)});
  std::vector<std::string_view> views;
  p.split(text, views);
  return {views.begin(), views.end()};
}

using V = std::vector<std::string>;

// Every expected split here was checked against `tokenizers`' Split pre-tokenizer.
TEST(PreTokenizer, LettersAbsorbCombiningMarksOnlyInQwen35) {
  // x + U+0301 has no precomposed form, so NFC leaves it as two code points.
  EXPECT_EQ(pieces("qwen35", "x\u0301y z\u0316\u0301"), (V{"x\u0301y", " z\u0316\u0301"}));
  EXPECT_EQ(pieces("qwen2", "x\u0301y z\u0316\u0301"), (V{"x", "\u0301y", " z", "\u0316\u0301"}));
  // Devanagari: the virama (Mn) stays inside the word.
  EXPECT_EQ(pieces("qwen35", "क्षत्रिय"), (V{"क्षत्रिय"}));
  EXPECT_EQ(pieces("qwen2", "क्षत्रिय"), (V{"क", "्षत", "्र", "िय"}));
  // A mark after a space: the space prefixes the mark-and-letter run.
  EXPECT_EQ(pieces("qwen35", "a \u0301b"), (V{"a", " \u0301b"}));
  EXPECT_EQ(pieces("qwen2", "a \u0301b"), (V{"a", " \u0301", "b"}));
}

TEST(PreTokenizer, MarksLeavePunctuationRunsInQwen35) {
  EXPECT_EQ(pieces("qwen35", "!!\u0301?"), (V{"!!", "\u0301", "?"}));
  EXPECT_EQ(pieces("qwen2", "!!\u0301?"), (V{"!!\u0301?"}));
}

TEST(PreTokenizer, SharedRules) {
  for (const char* pre : {"qwen35", "qwen2"}) {
    SCOPED_TRACE(pre);
    // Digits one by one; contractions case-insensitive; white space before a word kept apart.
    EXPECT_EQ(pieces(pre, "abc 12345"), (V{"abc", " ", "1", "2", "3", "4", "5"}));
    EXPECT_EQ(pieces(pre, "I'M you'Re"), (V{"I", "'M", " you", "'Re"}));
    EXPECT_EQ(pieces(pre, "a   b\n\n  c"), (V{"a", "  ", " b", "\n\n", " ", " c"}));
    EXPECT_EQ(pieces(pre, "x!!\r\n\r\ny"), (V{"x", "!!\r\n\r\n", "y"}));
    EXPECT_EQ(pieces(pre, "end  "), (V{"end", "  "}));
  }
  EXPECT_EQ(pieces("gpt2", "Hello  world's 123"), (V{"Hello", " ", " world", "'s", " 123"}));
}

TEST(PreTokenizer, CustomRegexesApplyInTurn) {
  // A first split on commas (Isolated: the comma is its own piece), then on spaces.
  const tok::PreTokenizer p({",", " "});
  std::vector<std::string_view> views;
  p.split("a b,c", views);
  EXPECT_EQ(V(views.begin(), views.end()), (V{"a", " ", "b", ",", "c"}));
  EXPECT_THROW(tok::PreTokenizer({"(unclosed"}), Error);
}

TEST(PreTokenizer, Qwen35EncodesMarkedWordsAsOnePiece) {
  // A synthetic vocabulary where "क्ष" is reachable through merges: as one qwen35 piece it
  // becomes one token, while Qwen2's split ("क", "्ष") cannot reach it.
  for (const char* pre : {"qwen35", "qwen2"}) {
    ByteSpec b(pre);
    b.add_merge("\xE0", "\xA4");
    b.add_merge("\xE0", "\xA5");
    const int32_t ka = b.add_merge("\xE0\xA4", "\x95");      // क
    const int32_t virama = b.add_merge("\xE0\xA5", "\x8D");  // ्
    const int32_t ssa = b.add_merge("\xE0\xA4", "\xB7");     // ष
    const int32_t ka_virama = b.add_merge("क", "्");
    const int32_t kssa = b.add_merge("क्", "ष");
    const Tokenizer t = b.build();
    if (std::string(pre) == "qwen35") {
      EXPECT_EQ(t.encode("क्ष"), (std::vector<int32_t>{kssa}));
    } else {
      EXPECT_EQ(t.encode("क्ष"), (std::vector<int32_t>{ka, virama, ssa}));
    }
    EXPECT_NE(ka_virama, kssa);
    EXPECT_EQ(t.decode(t.encode("क्ष")), "क्ष");
  }
}

}  // namespace
}  // namespace hostlm::test
