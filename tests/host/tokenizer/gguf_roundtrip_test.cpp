// Writing the tokenizer keys into a GGUF (as llama.cpp's converter does) and loading them
// back gives the same tokenizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include "corpus.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm::test {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("hostlm_tok_" + std::to_string(::getpid()) + "_" + name)) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::unique_ptr<GgufFile> write_and_open(const Tokenizer& t, const TempFile& file, int32_t padded) {
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("qwen35"));
  t.write_gguf(writer, padded);
  writer.write(file.path());
  return GgufFile::open(file.path());
}

TEST(GgufTokenizer, SyntheticRoundTrip) {
  ByteSpec b("qwen35");
  const int32_t ab = b.add_merge("a", "b");
  const int32_t ctl = b.add_token({.content = "<|end|>", .special = true});
  const int32_t tag = b.add_token({.content = "<tag>", .special = false});
  b.spec().eos_id = ctl;
  const Tokenizer t = b.build();
  const TempFile file("synthetic.gguf");
  const auto gguf = write_and_open(t, file, 300);

  EXPECT_EQ(gguf->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(gguf->get_string("tokenizer.ggml.pre"), "qwen35");
  const auto tokens = *gguf->get_string_array("tokenizer.ggml.tokens");
  const auto types = *gguf->get_int_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), 300u);
  EXPECT_EQ(tokens[' '], "\xC4\xA0");  // Ġ
  EXPECT_EQ(tokens[ctl], "<|end|>");
  EXPECT_EQ(tokens[299], "[PAD299]");
  EXPECT_EQ(types['a'], 1);
  EXPECT_EQ(types[ctl], 3);
  EXPECT_EQ(types[tag], 4);
  EXPECT_EQ(types[299], 5);
  EXPECT_EQ(*gguf->get_string_array("tokenizer.ggml.merges"), (std::vector<std::string>{"a b"}));
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.eos_token_id"), ctl);
  EXPECT_FALSE(gguf->get_int("tokenizer.ggml.bos_token_id"));
  EXPECT_EQ(gguf->get_bool("tokenizer.ggml.add_bos_token"), false);

  const Tokenizer back = Tokenizer::from_gguf(*gguf);
  EXPECT_EQ(back.vocab_size(), 300);
  EXPECT_EQ(back.eos_id(), ctl);
  const std::string text = "ab<|end|>x<tag>\u00e9";
  EXPECT_EQ(back.encode(text), t.encode(text));
  EXPECT_EQ(back.encode(text), (std::vector<int32_t>{ab, ctl, 'x', tag, 0xC3, 0xA9}));
  EXPECT_EQ(back.encode(text, {.parse_special = false}), t.encode(text, {.parse_special = false}));
  EXPECT_EQ(back.decode(std::vector<int32_t>{ab, ctl, 299}), "ab<|end|>");
  // Tokenizer::load recognises the GGUF by its magic.
  EXPECT_EQ(Tokenizer::load(file.path()).encode(text), t.encode(text));
}

TEST(GgufTokenizer, Qwen3RoundTripOnCorpus) {
  const Tokenizer hf = Tokenizer::from_hf_json(qwen3_tokenizer_json());
  const TempFile file("qwen3.gguf");
  const auto gguf = write_and_open(hf, file, 151936);
  EXPECT_EQ(gguf->get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.eos_token_id"), 151645);
  EXPECT_EQ(gguf->get_int("tokenizer.ggml.padding_token_id"), 151643);
  const auto merges = *gguf->get_string_array("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), 151387u);
  EXPECT_EQ(merges[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  const auto types = *gguf->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types[151644], 3);  // <|im_start|>: special
  EXPECT_EQ(types[151659], 3);  // <|fim_prefix|>: not special, but shaped like a control token
  EXPECT_EQ(types[151667], 4);  // <think>
  EXPECT_EQ(types[151935], 5);

  const Tokenizer back = Tokenizer::from_gguf(*gguf);
  EXPECT_EQ(back.vocab_size(), 151936);
  EXPECT_EQ(back.eos_id(), 151645);
  size_t mismatches = 0;
  for (const CorpusLine& line : load_corpus()) {
    // Special parsing on: both match every added token. (Off, the GGUF has lost HF's
    // "special" flag of <|fim_*|>, which it types CONTROL.)
    if (back.encode(line.text) != line.ids && ++mismatches <= 5) ADD_FAILURE() << line.text;
    if (back.decode(line.ids) != hf.decode(line.ids) && ++mismatches <= 5)
      ADD_FAILURE() << line.text;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(GgufTokenizer, MissingOrForeignTokenizerIsAnError) {
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("qwen35"));
  const TempFile none("none.gguf");
  writer.write(none.path());
  EXPECT_THROW(Tokenizer::from_gguf(*GgufFile::open(none.path())), Error);
  writer.set("tokenizer.ggml.model", GgufValue::string("llama"));
  const TempFile spm("spm.gguf");
  writer.write(spm.path());
  EXPECT_THROW(Tokenizer::from_gguf(*GgufFile::open(spm.path())), Error);
}

}  // namespace
}  // namespace hostlm::test
