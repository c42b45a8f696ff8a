// Decoding: invalid UTF-8 becomes U+FFFD as HF decode does (one per maximal subpart, as
// Rust's from_utf8_lossy), and the streaming decoder holds unfinished sequences back.
#include <gtest/gtest.h>

#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm::test {
namespace {

const std::string R = "\xEF\xBF\xBD";

TEST(Decode, InvalidBytesAsHf) {
  const Tokenizer t = ByteSpec().build();
  // Expected strings observed from `tokenizers` 0.23 decode of the same byte tokens.
  EXPECT_EQ(t.decode(byte_ids("\x80")), R);      // lone continuation byte
  EXPECT_EQ(t.decode(byte_ids("\xE4\xB8")), R);  // truncated sequence: one
  EXPECT_EQ(t.decode(byte_ids("\xE4\xB8"
                              "A")),
            R + "A");
  EXPECT_EQ(t.decode(byte_ids("\xF0\x80")), R + R);                  // F0 needs 90..BF next
  EXPECT_EQ(t.decode(byte_ids("\xED\xA0\x80")), R + R + R);          // surrogate
  EXPECT_EQ(t.decode(byte_ids("\xC0\xAF")), R + R);                  // overlong
  EXPECT_EQ(t.decode(byte_ids("\xF4\x90\x80\x80")), R + R + R + R);  // above U+10FFFF
  EXPECT_EQ(t.decode(byte_ids("\xF0\x9F\x98")), R);
  EXPECT_EQ(t.decode(byte_ids("\xE4\xB8\xAD")), "\xE4\xB8\xAD");
  EXPECT_EQ(t.decode(byte_ids("\xFF"
                              "a\xC3")),
            R + "a" + R);
  // Unknown ids are skipped, as HF does.
  EXPECT_EQ(t.decode(std::vector<int32_t>{'a', -1, 999999, 'b'}), "ab");
}

TEST(Decode, StreamingHoldsIncompleteSequences) {
  const Tokenizer t = ByteSpec().build();
  StreamingDecoder d(t);
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(0xE4), "");
  EXPECT_EQ(d.push(0xB8), "");
  EXPECT_EQ(d.push(0xAD), "\xE4\xB8\xAD");
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push('x'), R + "x");  // the held byte can no longer complete
  EXPECT_EQ(d.push(0xE4), "");
  EXPECT_EQ(d.finish(), R);  // left unfinished at the end
  EXPECT_EQ(d.finish(), "");
}

TEST(Decode, StreamingEqualsBatchOnEveryByteSequence) {
  // Every sequence of up to three bytes drawn from a set that covers each UTF-8 case.
  const Tokenizer t = ByteSpec().build();
  const std::vector<int32_t> alphabet = {'a',  0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF,
                                         0xE0, 0xE4, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  std::vector<int32_t> ids;
  size_t checked = 0;
  auto check = [&] {
    StreamingDecoder d(t);
    std::string streamed;
    for (int32_t id : ids) streamed += d.push(id);
    streamed += d.finish();
    ASSERT_EQ(streamed, t.decode(ids));
    ++checked;
  };
  for (int32_t a : alphabet) {
    for (int32_t b : alphabet) {
      for (int32_t c : alphabet) {
        ids = {a, b, c};
        check();
        ids = {a, b, c, a};
        check();
      }
    }
  }
  EXPECT_EQ(checked, alphabet.size() * alphabet.size() * alphabet.size() * 2);
}

TEST(Decode, SkipSpecialInStream) {
  ByteSpec b;
  const int32_t end = b.add_token({.content = "<|end|>", .special = true});
  const Tokenizer t = b.build();
  StreamingDecoder keep(t), skip(t, true);
  EXPECT_EQ(keep.push(end), "<|end|>");
  EXPECT_EQ(skip.push(end), "");
}

}  // namespace
}  // namespace hostlm::test
