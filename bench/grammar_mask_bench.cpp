// The per-token cost of grammar-constrained decoding over a real Qwen vocabulary (issue 10):
// a JSON Schema compiled once, then a valid document walked token by token.
//
//   GrammarMask/walk_mask: per token, the full mask of allowed tokens (allowed_tokens) and
//     accept_token, with a fresh matcher per document as each request has. This is the
//     sampler's worst case: it computes the mask only when its unconstrained pick is rejected
//     (always, with random weights; rarely inside free text with a trained model).
//   GrammarMask/walk_accept: accept_token alone, the cost when the first pick fits.
//   GrammarMask/state:<where>: one mask at a given point of the document whose state is not in
//     the matcher's mask cache (the matcher has just taken one more character), warm means
//     the matcher already walked the document up to there, cold a fresh matcher.
//   Sampler/<none|json|schema>: Sampler::sample as the engine calls it (hostlm serve's
//     sampling defaults) on random logits over the vocabulary, unconstrained, in JSON mode and
//     held to the schema: what random-weight models pay per token. The sampler computes the
//     mask only when its first pick is refused; an answer that ends starts the next one.
//   DecodeStep: one single-token forward pass of HOSTLM_BENCH_MODEL (a GGUF; threads from
//     HOSTLM_BENCH_THREADS), to set the mask's cost against; skipped without a model.
//
// Vocabulary: $HOSTLM_BENCH_TOKENIZER (a tokenizer.json, a folder holding one, or a GGUF);
// else the real Qwen3.5 vocabulary written by `tools/make_tokenizer_reference.py --qwen35-real
// DIR` when $HOSTLM_QWEN35_REAL_DIR names DIR; else the Qwen3 tokenizer of ../shared/data.
// After the runs a summary line gives the walk's time per token beside the decode step's.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "grammar/vocab_trie.h"
#include "hostlm/error.h"
#include "hostlm/grammar.h"
#include "hostlm/model_loader.h"
#include "hostlm/sampler.h"
#include "hostlm/text_generation.h"
#include "hostlm/tokenizer.h"
#include "serving/sampling.h"

namespace {

using namespace hostlm;
namespace fs = std::filesystem;

// A schema with the usual parts of structured output: bounded and free strings, a pattern,
// an integer range, a number, an enum, an array and a nested object.
constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.[a-z]+$"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "address": {"type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["city", "zip"]},
    "status": {"enum": ["active", "inactive", "banned"]},
    "bio": {"type": "string"}
  },
  "required": ["name", "age", "email", "score", "tags", "address", "status", "bio"]
})";

constexpr const char* kDocument =
    R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "score": 98.25, )"
    R"("tags": ["mathematics", "poetry", "engines"], "address": {"city": "London", "zip": )"
    R"("W1 4AB"}, "status": "active", "bio": "English mathematician and writer, chiefly )"
    R"(known for her work on Charles Babbage's proposed mechanical general-purpose computer, )"
    R"(the Analytical Engine. She was the first to recognise that the machine had applications )"
    R"(beyond pure calculation, and published the first algorithm intended to be carried out )"
    R"(by such a machine."})";

// Points of the document for the per-state runs: the mask right after the prefix.
struct StatePoint {
  const char* name;
  const char* prefix_end;  // the prefix ends just after the first occurrence of this text
};
constexpr StatePoint kStates[] = {
    {"start_of_object", ""},
    {"after_key", R"("age": )"},
    {"inside_bounded_string", R"("name": "Ada Lo)"},
    {"inside_free_string", R"(general-purpose com)"},
    {"inside_number", R"("score": 98.2)"},
    {"inside_enum", R"("status": "act)"},
};

fs::path source_dir() {
  if (const char* env = std::getenv("HOSTLM_SOURCE_DIR"); env && *env) return env;
  return fs::path(__FILE__).parent_path().parent_path();
}

fs::path tokenizer_path() {
  if (const char* env = std::getenv("HOSTLM_BENCH_TOKENIZER"); env && *env) return env;
  if (const char* env = std::getenv("HOSTLM_QWEN35_REAL_DIR"); env && *env)
    return fs::path(env) / "tokenizer.json";
  return source_dir() / ".." / "shared" / "data" / "qwen3-tokenizer" / "tokenizer.json";
}

struct Fixture {
  Tokenizer tokenizer;
  std::shared_ptr<const GrammarVocab> vocab;
  Grammar grammar;
  std::vector<int32_t> doc;  // kDocument's tokens
  double vocab_build_ms = 0;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    const fs::path path = tokenizer_path();
    Tokenizer tok = Tokenizer::load(path);
    const auto t0 = std::chrono::steady_clock::now();
    auto vocab = std::make_shared<const GrammarVocab>(tok);
    const double build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Grammar g = Grammar::from_json_schema(std::string_view(kSchema));
    std::vector<int32_t> doc = tok.encode(kDocument, {.parse_special = false});
    std::printf("vocabulary: %s, %d ids, %zu trie nodes, trie built in %.0f ms\n",
                path.string().c_str(), vocab->size(), vocab->trie().nodes.size(), build_ms);
    std::printf("document: %zu bytes, %zu tokens\n", std::string_view(kDocument).size(),
                doc.size());
    return Fixture{std::move(tok), std::move(vocab), std::move(g), std::move(doc), build_ms};
  }();
  return f;
}

double g_walk_ms_per_token = 0, g_accept_ms_per_token = 0, g_decode_ms = 0;
double g_sampler_ms[3] = {0, 0, 0};  // per token: none, json, schema
constexpr const char* kSamplerNames[3] = {"Sampler/none", "Sampler/json", "Sampler/schema"};

void walk(benchmark::State& state, bool with_mask) {
  const Fixture& f = fixture();
  TokenBitmask mask;
  for (auto _ : state) {
    GrammarMatcher m(f.grammar, f.vocab);
    for (int32_t tok : f.doc) {
      if (with_mask) {
        m.allowed_tokens(mask);
        if (!mask.test(tok)) {
          state.SkipWithError("the mask refuses a token of the valid document");
          return;
        }
      }
      if (!m.accept_token(tok)) {
        state.SkipWithError("the grammar refuses a token of the valid document");
        return;
      }
    }
    if (!m.can_end()) state.SkipWithError("the document did not complete the grammar");
    benchmark::DoNotOptimize(mask.words.data());
  }
  const double n = static_cast<double>(f.doc.size());
  state.counters["per_token"] = benchmark::Counter(
      n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["tokens"] = n;
}

// Positions the matcher just after `point`'s prefix; false if the document lacks it.
std::optional<std::string> prefix_of(const StatePoint& point) {
  const std::string_view doc = kDocument;
  const std::string_view end = point.prefix_end;
  if (end.empty()) return std::string();
  const size_t at = doc.find(end);
  if (at == std::string_view::npos) return std::nullopt;
  return std::string(doc.substr(0, at + end.size()));
}

void BM_State(benchmark::State& state, const StatePoint& point, bool warm) {
  const Fixture& f = fixture();
  const std::optional<std::string> prefix = prefix_of(point);
  if (!prefix) {
    state.SkipWithError("the state's text is not in the document");
    return;
  }
  TokenBitmask mask;
  // Warm: the state one character earlier had its mask computed, as in a generation.
  GrammarMatcher base(f.grammar, f.vocab);
  std::string last;
  if (warm && !prefix->empty()) {
    if (!base.accept_bytes(std::string_view(*prefix).substr(0, prefix->size() - 1))) {
      state.SkipWithError("the grammar refuses the prefix");
      return;
    }
    base.allowed_tokens(mask);
    last = prefix->substr(prefix->size() - 1);
  } else {
    last = *prefix;
  }
  for (auto _ : state) {
    state.PauseTiming();
    GrammarMatcher m = warm ? base : GrammarMatcher(f.grammar, f.vocab);
    const bool ok = m.accept_bytes(last);
    state.ResumeTiming();
    if (!ok) {
      state.SkipWithError("the grammar refuses the prefix");
      return;
    }
    m.allowed_tokens(mask);
    benchmark::DoNotOptimize(mask.words.data());
  }
  state.counters["allowed"] = mask.count();
}

enum class Constraint { kNone, kJson, kJsonSchema };

void BM_Sampler(benchmark::State& state, Constraint which) {
  const Fixture& f = fixture();
  // Random-weight models give logits of about this spread; a few vectors, reused.
  static const std::vector<std::vector<float>> pool = [&] {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<std::vector<float>> p(8, std::vector<float>(static_cast<size_t>(f.vocab->size())));
    for (auto& v : p)
      for (float& x : v) x = normal(rng);
    return p;
  }();
  GenerationOptions options = GenerationOptions::ollama_defaults();
  options.seed = 7;
  const SamplerParams params = serving::sampler_params(options, 4096);
  GrammarConstraint constraint;
  if (which != Constraint::kNone) {
    constraint.grammar = std::make_shared<const Grammar>(
        which == Constraint::kJson ? Grammar::json_object() : f.grammar);
    constraint.vocab = f.vocab;
  }
  const std::vector<int32_t>& ends = f.vocab->end_tokens();
  constexpr int kTokens = 64;
  int64_t answers = 0;
  for (auto _ : state) {
    Sampler sampler(params, constraint);  // one per request, as the engine makes them
    for (int i = 0; i < kTokens; ++i) {
      const int32_t t = sampler.sample(pool[static_cast<size_t>(i) % pool.size()]);
      if (constraint && std::find(ends.begin(), ends.end(), t) != ends.end()) {
        sampler.restart_constraint();
        ++answers;
      }
    }
  }
  state.counters["per_token"] = benchmark::Counter(
      kTokens, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["answers"] =
      static_cast<double>(answers) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
}

void BM_DecodeStep(benchmark::State& state) {
  const char* path = std::getenv("HOSTLM_BENCH_MODEL");
  if (path == nullptr || *path == '\0') {
    state.SkipWithError("set HOSTLM_BENCH_MODEL=FILE.gguf to time a decode step beside the mask");
    return;
  }
  static PluginRegistry registry;  // outlives the models its plugins make
  ModelLoadOptions options;
  if (const char* t = std::getenv("HOSTLM_BENCH_THREADS")) options.threads = std::atoi(t);
  if (const char* b = std::getenv("HOSTLM_BENCH_BACKEND")) options.backend = b;
  LoadedModel loaded(registry, path, options);
  Model& model = loaded.model();
  std::vector<float> logits(static_cast<size_t>(model.info().n_vocab));
  auto seq = model.new_sequence(4096);
  int32_t token = 100;
  const std::vector<int32_t> warm{1, 2, 3, 4, 5, 6, 7, 8};
  model.eval(*seq, warm, false, logits);
  for (auto _ : state) {
    if (seq->n_past() >= 4000) {
      state.PauseTiming();
      seq = model.new_sequence(4096);
      state.ResumeTiming();
    }
    model.eval(*seq, std::span<const int32_t>(&token, 1), false, logits);
    token = (token + 7) % 1000;
  }
}

// Keeps the walks' results for the summary.
class Summary : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal: the device script keeps this output in a file.
  Summary() : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string name = r.benchmark_name();
      // CPU time for the single-threaded grammar and sampler runs (the machine may be
      // shared); wall time for the decode step, which runs on several threads or the GPU.
      const bool decode = r.benchmark_name().rfind("DecodeStep", 0) == 0;
      const double ms = (decode ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime()) / 1e6 *
                        (r.time_unit == benchmark::kMillisecond   ? 1e6
                         : r.time_unit == benchmark::kMicrosecond ? 1e3
                         : r.time_unit == benchmark::kSecond      ? 1e9
                                                                  : 1.0);
      const double tokens = static_cast<double>(fixture().doc.size());
      if (name.rfind("GrammarMask/walk_mask", 0) == 0) g_walk_ms_per_token = ms / tokens;
      if (name.rfind("GrammarMask/walk_accept", 0) == 0) g_accept_ms_per_token = ms / tokens;
      if (name.rfind("DecodeStep", 0) == 0) g_decode_ms = ms;
      for (int k = 0; k < 3; ++k)
        if (name.rfind(kSamplerNames[k], 0) == 0) g_sampler_ms[k] = ms / 64;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  try {
    fixture();
  } catch (const hostlm::Error& e) {
    std::fprintf(stderr, "bench_grammar_mask: %s\n", e.what());
    return 1;
  }
  benchmark::RegisterBenchmark("GrammarMask/walk_mask", [](benchmark::State& s) {
    walk(s, true);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("GrammarMask/walk_accept", [](benchmark::State& s) {
    walk(s, false);
  })->Unit(benchmark::kMillisecond);
  for (const StatePoint& p : kStates) {
    for (bool warm : {true, false}) {
      const std::string name =
          std::string("GrammarMask/state:") + p.name + (warm ? "/warm" : "/cold");
      benchmark::RegisterBenchmark(name.c_str(), [&p, warm](benchmark::State& s) {
        BM_State(s, p, warm);
      })->Unit(benchmark::kMicrosecond);
    }
  }
  for (const auto& [name, which] :
       {std::pair{"Sampler/none", Constraint::kNone}, std::pair{"Sampler/json", Constraint::kJson},
        std::pair{"Sampler/schema", Constraint::kJsonSchema}}) {
    benchmark::RegisterBenchmark(name, [which = which](benchmark::State& s) {
      BM_Sampler(s, which);
    })->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("DecodeStep", BM_DecodeStep)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  Summary reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (g_sampler_ms[0] > 0 && g_sampler_ms[2] > 0) {
    std::printf(
        "\nsampler per token (CPU): unconstrained %.3f ms, json %.3f ms, schema %.3f ms: "
        "the schema adds %.3f ms per token",
        g_sampler_ms[0], g_sampler_ms[1], g_sampler_ms[2], g_sampler_ms[2] - g_sampler_ms[0]);
    if (g_decode_ms > 0)
      std::printf(", %.1f%% of a decode step",
                  100.0 * (g_sampler_ms[2] - g_sampler_ms[0]) / g_decode_ms);
    std::printf("\n");
  }
  if (g_walk_ms_per_token > 0) {
    std::printf("mask walk per token (CPU): mask + accept %.3f ms, accept alone %.4f ms",
                g_walk_ms_per_token, g_accept_ms_per_token);
    if (g_decode_ms > 0)
      std::printf("; one decode step of HOSTLM_BENCH_MODEL %.3f ms: the mask adds %.1f%%",
                  g_decode_ms, 100.0 * g_walk_ms_per_token / g_decode_ms);
    else
      std::printf(
          "; decode steps for comparison (README, H200, Q4_K_M tg128): 0.8B 2.3 ms, 9B 5.5 ms "
          "(set HOSTLM_BENCH_MODEL to time one here)");
    std::printf("\n");
  }
  return 0;
}
