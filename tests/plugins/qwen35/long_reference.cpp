#include "long_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "reference_data.h"

namespace hostlm::testing {
namespace {

template <typename T>
std::vector<T> read_binary(const std::filesystem::path& path, size_t count) {
  std::vector<T> out(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(count * sizeof(T)));
  if (!f) throw std::runtime_error("short or missing reference file " + path.string());
  return out;
}

}  // namespace

LongReference load_long_reference() {
  const auto data = source_dir() / "tests" / "data";
  const auto refdir = data / "reference";
  std::ifstream in(refdir / "tiny-long-f32.json");
  if (!in) throw std::runtime_error("missing tests/data/reference/tiny-long-f32.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  LongReference ref;
  ref.folder = data / "models" / j.at("model").get<std::string>();
  ref.vocab = j.at("vocab").get<int64_t>();
  ref.tokens = read_binary<int32_t>(refdir / j.at("tokens_file").get<std::string>(),
                                    j.at("n_tokens").get<size_t>());
  for (const auto& w : j.at("windows")) {
    LongReferenceWindow win;
    win.start = w.at("start").get<int64_t>();
    win.length = w.at("length").get<int64_t>();
    win.logit_std = w.at("logit_std").get<double>();
    win.logits = read_binary<float>(refdir / w.at("logits_file").get<std::string>(),
                                    static_cast<size_t>(win.length * ref.vocab));
    ref.windows.push_back(std::move(win));
  }
  return ref;
}

int64_t long_context_tokens(int64_t fallback) {
  const char* env = std::getenv("HOSTLM_LONG_CONTEXT_TOKENS");
  return env != nullptr && *env != '\0' ? std::stoll(env) : fallback;
}

std::vector<WindowError> compare_long_reference(Model& model, const LongReference& ref,
                                                int64_t n_tokens, int64_t chunk) {
  n_tokens = std::min<int64_t>(n_tokens, static_cast<int64_t>(ref.tokens.size()));
  const auto vocab = static_cast<size_t>(ref.vocab);
  auto seq = model.new_sequence(n_tokens);
  std::vector<float> logits(static_cast<size_t>(chunk) * vocab);
  std::vector<WindowError> errors;
  for (const auto& w : ref.windows)
    if (w.start + w.length <= n_tokens) errors.push_back({w.start, w.length, 0.0});
  for (int64_t begin = 0; begin < n_tokens; begin += chunk) {
    const int64_t T = std::min(chunk, n_tokens - begin);
    const std::span<const int32_t> tokens(ref.tokens.data() + begin, static_cast<size_t>(T));
    model.eval(*seq, tokens, true, std::span<float>(logits.data(), static_cast<size_t>(T) * vocab));
    for (size_t i = 0; i < errors.size(); ++i) {
      const LongReferenceWindow& w = ref.windows[i];
      for (int64_t p = std::max(w.start, begin); p < std::min(w.start + w.length, begin + T); ++p)
        for (size_t v = 0; v < vocab; ++v) {
          const double ours = logits[static_cast<size_t>(p - begin) * vocab + v];
          const double theirs = w.logits[static_cast<size_t>(p - w.start) * vocab + v];
          errors[i].max_rel_err =
              std::max(errors[i].max_rel_err, std::abs(ours - theirs) / w.logit_std);
        }
    }
  }
  return errors;
}

}  // namespace hostlm::testing
