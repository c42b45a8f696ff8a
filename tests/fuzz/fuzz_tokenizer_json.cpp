// libFuzzer target for loading a Hugging Face tokenizer.json (the file a model folder brings;
// its pre-tokenizer regexes go to PCRE2). Each input is written to a tokenizer.json in a
// private folder and loaded: it either loads or fails with hostlm::Error naming the file,
// never another exception or a crash. A tokenizer that loads must then encode and decode text
// (with and without special tokens) to ids inside its vocabulary.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "hostlm/error.h"
#include "hostlm/tokenizer.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

const std::filesystem::path& file() {
  static const std::filesystem::path path = [] {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("hostlm-fuzz-tokenizer-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return dir / "tokenizer.json";
  }();
  return path;
}

void exercise(const hostlm::Tokenizer& tokenizer) {
  const std::string_view text =
      "Hello, w\xc3\xb6rld! 123  \n\n<|im_end|> \xe4\xbd\xa0\xe5\xa5\xbd \xff";
  for (const bool special : {true, false}) {
    const auto ids = tokenizer.encode(text, {.parse_special = special});
    for (const int32_t id : ids) {
      check(id >= 0 && id < tokenizer.vocab_size());
      (void)tokenizer.token_bytes(id);
    }
    (void)tokenizer.decode(ids);
    (void)tokenizer.decode(ids, true);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    exercise(hostlm::Tokenizer::from_hf_json(file()));
  } catch (const hostlm::Error& e) {
    check(std::string_view(e.what()).starts_with(file().string()));
  }
  return 0;
}
