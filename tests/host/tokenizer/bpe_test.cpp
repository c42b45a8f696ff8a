// The BPE engine on hand-made vocabularies: merge order, ties, long pieces, added tokens.
#include <gtest/gtest.h>

#include "hostlm/error.h"
#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm::test {
namespace {

using Ids = std::vector<int32_t>;

TEST(Bpe, LowestRankFirstLeftmostOnTies) {
  ByteSpec b;
  const int32_t aa = b.add_merge("a", "a");
  const int32_t ab = b.add_merge("a", "b");
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode("aaa"), (Ids{aa, 'a'}));
  EXPECT_EQ(t.encode("aab"), (Ids{aa, 'b'}));  // "a a" outranks "a b"
  EXPECT_EQ(t.encode("ab"), (Ids{ab}));
  EXPECT_EQ(t.encode("aaaa"), (Ids{aa, aa}));
}

TEST(Bpe, MergesBuildOnEachOther) {
  ByteSpec b;
  const int32_t th = b.add_merge("t", "h");
  const int32_t the = b.add_merge("th", "e");
  const int32_t sp_the = b.add_merge(" ", "the");
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode("the the"), (Ids{the, sp_the}));
  EXPECT_EQ(t.encode("thx"), (Ids{th, 'x'}));
}

TEST(Bpe, LongPiecesMatchShortOnes) {
  // Long pieces take the heap path; the result must equal the pairwise-scan path.
  ByteSpec b;
  const int32_t aa = b.add_merge("a", "a");
  const int32_t aaaa = b.add_merge("aa", "aa");
  const Tokenizer t = b.build();
  for (size_t n : {1u, 2u, 3u, 5u, 7u, 23u, 24u, 25u, 101u, 1000u}) {
    const Ids ids = t.encode(std::string(n, 'a'));
    Ids want(n / 4, aaaa);
    if (n % 4 >= 2) want.push_back(aa);
    if (n % 2) want.push_back('a');
    EXPECT_EQ(ids, want) << n;
  }
}

TEST(Bpe, InvalidUtf8InputBecomesReplacementCharacters) {
  ByteSpec b;
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode(std::string("a\x80z")), byte_ids("a\xEF\xBF\xBDz"));
  EXPECT_EQ(t.encode(std::string("\xE4\xB8")), byte_ids("\xEF\xBF\xBD"));
}

TEST(Bpe, BadSpecsAreErrors) {
  ByteSpec unknown_merge;
  unknown_merge.spec().merges.emplace_back("q", "zz");
  EXPECT_THROW(unknown_merge.build(), Error);
  ByteSpec no_result;
  no_result.spec().merges.emplace_back("q", "z");  // "qz" is not in the vocabulary
  EXPECT_THROW(no_result.build(), Error);
  ByteSpec bad_pre("llama3");
  EXPECT_THROW(bad_pre.build(), Error);
  ByteSpec bad_id;
  bad_id.spec().eos_id = 100000;
  EXPECT_THROW(bad_id.build(), Error);
}

TEST(AddedTokens, LongestMatchAndSpecialSwitch) {
  ByteSpec b;
  const int32_t im = b.add_token({.content = "<|im|>", .special = true});
  const int32_t im_long = b.add_token({.content = "<|im|>x", .special = true});
  const int32_t think = b.add_token({.content = "<think>", .special = false});
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode("a<|im|>b"), (Ids{'a', im, 'b'}));
  EXPECT_EQ(t.encode("<|im|>x<|im|>"), (Ids{im_long, im}));
  // Special text stays text without parse_special; non-special added tokens still match.
  Ids plain = byte_ids("a<|im|>b");
  EXPECT_EQ(t.encode("a<|im|>b", {.parse_special = false}), plain);
  plain = byte_ids("<|im|>");
  plain.push_back(think);
  EXPECT_EQ(t.encode("<|im|><think>", {.parse_special = false}), plain);
  EXPECT_EQ(t.decode(Ids{'a', im, think}), "a<|im|><think>");
  EXPECT_EQ(t.decode(Ids{'a', im, think}, /*skip_special=*/true), "a<think>");
}

TEST(AddedTokens, FlagsFollowHf) {
  // Expected results were taken from `tokenizers` 0.23 with the same tokens added.
  ByteSpec b;
  const int32_t lx = b.add_token({.content = " lx ", .lstrip = true, .rstrip = true});
  const int32_t word = b.add_token({.content = "qzq", .single_word = true});
  const int32_t norm = b.add_token({.content = "e\u0301x", .normalized = true});
  const int32_t raw = b.add_token({.content = "\u03a91"});
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode("a  lx  b"), (Ids{'a', lx, 'b'}));
  auto with = [](std::string_view before, int32_t id, std::string_view after) {
    Ids ids = byte_ids(before);
    ids.push_back(id);
    const Ids tail = byte_ids(after);
    ids.insert(ids.end(), tail.begin(), tail.end());
    return ids;
  };
  EXPECT_EQ(t.encode("qzq x"), with("", word, " x"));
  EXPECT_EQ(t.encode("(qzq)"), with("(", word, ")"));
  EXPECT_EQ(t.encode("x\u00a0qzq\u00a0y"), with("x\u00a0", word, "\u00a0y"));
  EXPECT_EQ(t.encode("qzqa"), byte_ids("qzqa"));
  EXPECT_EQ(t.encode("qzq_"), byte_ids("qzq_"));
  EXPECT_EQ(t.encode("\u00e9qzq"), byte_ids("\u00e9qzq"));
  EXPECT_EQ(t.encode("1qzq"), byte_ids("1qzq"));
  // A normalised token matches after NFC, in either input form; a raw one only as written.
  EXPECT_EQ(t.encode("a\u00e9x e\u0301x"), (Ids{'a', norm, ' ', norm}));
  EXPECT_EQ(t.encode("\u03a91 \u21261"), with("", raw, " \u03a91"));
  // Decode maps added text through the byte table when it can (HF does): "éx" -> 0xE9 'x'.
  EXPECT_EQ(t.decode(Ids{norm}), "\xEF\xBF\xBDx");
  EXPECT_EQ(t.decode(Ids{raw}), "\u03a91");
}

TEST(Bpe, BosIsAddedOnlyWhenAsked) {
  ByteSpec b;
  b.spec().bos_id = 'B';
  b.spec().add_bos = true;
  const Tokenizer t = b.build();
  EXPECT_EQ(t.encode("x"), (Ids{'B', 'x'}));
  EXPECT_EQ(t.encode("x", {.add_special_tokens = false}), (Ids{'x'}));
}

}  // namespace
}  // namespace hostlm::test
