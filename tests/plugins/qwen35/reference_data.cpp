#include "reference_data.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace hostlm::testing {

std::filesystem::path source_dir() {
  if (const char* env = std::getenv("HOSTLM_SOURCE_DIR")) return env;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

ReferenceModel load_reference(const std::string& name) {
  const auto data = source_dir() / "tests" / "data";
  std::ifstream in(data / "reference" / (name + ".json"));
  if (!in) throw std::runtime_error("missing reference for " + name);
  const nlohmann::json j = nlohmann::json::parse(in);
  ReferenceModel m;
  m.name = name;
  m.folder = data / "models" / name;
  m.vocab = j.at("vocab").get<int64_t>();
  for (const auto& [key, s] : j.at("sequences").items()) {
    ReferenceSequence seq;
    seq.name = key;
    seq.tokens = s.at("tokens").get<std::vector<int32_t>>();
    seq.positions = s.at("positions").get<std::vector<int64_t>>();
    seq.logit_std = s.at("logit_std").get<double>();
    seq.logits.resize(seq.positions.size() * static_cast<size_t>(m.vocab));
    std::ifstream f(data / "reference" / s.at("logits_file").get<std::string>(), std::ios::binary);
    f.read(reinterpret_cast<char*>(seq.logits.data()),
           static_cast<std::streamsize>(seq.logits.size() * sizeof(float)));
    if (!f) throw std::runtime_error("short reference logits file for " + name + "/" + key);
    m.sequences.push_back(std::move(seq));
  }
  // Shortest first, as the tests index them ([0]: 7 tokens, [1]: 100, back(): the longest);
  // the JSON object's keys come back sorted by name, which put "short" last.
  std::stable_sort(m.sequences.begin(), m.sequences.end(),
                   [](const auto& a, const auto& b) { return a.tokens.size() < b.tokens.size(); });
  m.greedy_prompt = j.at("greedy").at("prompt").get<std::vector<int32_t>>();
  m.greedy_generated = j.at("greedy").at("generated").get<std::vector<int32_t>>();
  return m;
}

std::vector<float> all_logits(Model& model, const std::vector<int32_t>& tokens) {
  std::vector<float> logits(tokens.size() * static_cast<size_t>(model.info().n_vocab));
  auto seq = model.new_sequence(static_cast<int64_t>(tokens.size()));
  model.eval(*seq, tokens, true, logits);
  return logits;
}

std::vector<int32_t> greedy_generate(Model& model, const std::vector<int32_t>& prompt, size_t n) {
  std::vector<float> logits(static_cast<size_t>(model.info().n_vocab));
  auto seq = model.new_sequence(static_cast<int64_t>(prompt.size() + n));
  model.eval(*seq, prompt, false, logits);
  std::vector<int32_t> generated;
  for (size_t i = 0; i < n; ++i) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(next);
    if (i + 1 < n) model.eval(*seq, std::span<const int32_t>(&next, 1), false, logits);
  }
  return generated;
}

double max_relative_error(const ReferenceSequence& ref, const std::vector<float>& all_logits,
                          int64_t vocab) {
  double worst = 0.0;
  for (size_t p = 0; p < ref.positions.size(); ++p)
    for (int64_t v = 0; v < vocab; ++v) {
      const double a = all_logits[static_cast<size_t>(ref.positions[p] * vocab + v)];
      const double b = ref.logits[p * static_cast<size_t>(vocab) + static_cast<size_t>(v)];
      worst = std::max(worst, std::abs(a - b) / ref.logit_std);
    }
  return worst;
}

}  // namespace hostlm::testing
