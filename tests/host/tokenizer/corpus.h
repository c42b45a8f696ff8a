// The identity corpus (tests/data/tokenizer/tokenizer_corpus.jsonl, written by
// tools/make_tokenizer_reference.py from the Hugging Face `tokenizers` package).
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.h"

namespace hostlm::test {

struct CorpusLine {
  std::string text;
  std::vector<int32_t> ids;                    // special parsing on
  std::optional<std::vector<int32_t>> plain;   // special parsing off, when different
  std::optional<std::vector<int32_t>> qwen35;  // qwen35 regex, when different
  bool nfc_changed = false;                    // decode(ids) is NFC(text), not text
};

inline std::filesystem::path corpus_path() {
  if (const char* env = std::getenv("HOSTLM_TOKENIZER_CORPUS")) return env;
  return source_dir() / "tests" / "data" / "tokenizer" / "tokenizer_corpus.jsonl";
}

// [p, s, middle] -> base[:p] + middle + base[len - s:]
inline std::vector<int32_t> apply_diff(const std::vector<int32_t>& base, const nlohmann::json& d) {
  const auto p = d.at(0).get<size_t>(), s = d.at(1).get<size_t>();
  std::vector<int32_t> out(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(p));
  for (const auto& id : d.at(2)) out.push_back(id.get<int32_t>());
  out.insert(out.end(), base.end() - static_cast<std::ptrdiff_t>(s), base.end());
  return out;
}

inline std::vector<CorpusLine> load_corpus(const std::filesystem::path& path = corpus_path()) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<CorpusLine> lines;
  std::string row;
  while (std::getline(in, row)) {
    const auto j = nlohmann::json::parse(row);
    CorpusLine line;
    line.text = j.at("text").get<std::string>();
    line.ids = j.at("ids").get<std::vector<int32_t>>();
    if (j.contains("plain")) line.plain = apply_diff(line.ids, j["plain"]);
    if (j.contains("q35")) line.qwen35 = apply_diff(line.ids, j["q35"]);
    line.nfc_changed = j.value("nfc", false);
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace hostlm::test
