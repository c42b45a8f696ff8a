// Given the tiny random model, grammar-constrained generation through the engine always
// yields text of the grammar: a JSON Schema's object with the right keys and types, any JSON
// object in JSON mode, and free text before a "start after" token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hostlm/engine.h"
#include "hostlm/grammar.h"
#include "hostlm/model_loader.h"
#include "hostlm/tokenizer.h"

namespace hostlm {
namespace {

std::filesystem::path tiny_model_dir() {
  const char* src = std::getenv("HOSTLM_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / "tests/data/models/tiny-tied-f32";
}

constexpr std::string_view kPersonSchema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},
  "age":{"type":"integer","minimum":0,"maximum":120}},
  "required":["name","age"],"additionalProperties":false})";

class ConstrainedTest : public ::testing::Test {
 protected:
  PluginRegistry registry;
  LoadedModel loaded{registry, tiny_model_dir(), ModelLoadOptions{}};
  Tokenizer tokenizer = Tokenizer::load(tiny_model_dir());
  std::shared_ptr<const GrammarVocab> vocab = std::make_shared<const GrammarVocab>(tokenizer);

  GenerationRequest request(const Grammar& grammar, uint64_t seed, int64_t max_tokens) {
    GenerationRequest r;
    r.prompt = tokenizer.encode("Reply with a person as JSON:");
    r.sampling.temperature = 1.f;
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    r.constraint.grammar = std::make_shared<const Grammar>(grammar);
    r.constraint.vocab = vocab;
    return r;
  }

  bool is_end(int32_t id) const {
    return std::ranges::find(vocab->end_tokens(), id) != vocab->end_tokens().end();
  }

  // The generated text without its end token; EXPECTs that an end token ended it.
  std::string answer_text(const GenerationResult& r) {
    EXPECT_EQ(r.done_reason, "stop") << r.error;
    std::vector<int32_t> ids = r.tokens;
    if (!ids.empty() && is_end(ids.back())) ids.pop_back();
    return tokenizer.decode(ids);
  }
};

TEST_F(ConstrainedTest, SchemaAnswersParseAndValidateAcrossSeeds) {
  const Grammar grammar = Grammar::from_json_schema(kPersonSchema);
  Engine engine(loaded.model(), {});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::string text = answer_text(engine.generate(request(grammar, seed, 200)));
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + text);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(text));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.size(), 2u);
    ASSERT_TRUE(j.contains("name") && j["name"].is_string());
    EXPECT_LE(j["name"].get<std::string>().size(), 12u * 4);  // 12 code points, UTF-8
    ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer());
    EXPECT_GE(j["age"].get<int64_t>(), 0);
    EXPECT_LE(j["age"].get<int64_t>(), 120);
  }
}

TEST_F(ConstrainedTest, JsonObjectModeParses) {
  const Grammar grammar = Grammar::json_object();
  Engine engine(loaded.model(), {});
  int ended = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const GenerationResult r = engine.generate(request(grammar, seed, 400));
    // A random model may keep an object open past the budget; what ends must parse.
    if (r.done_reason == "length") continue;
    ++ended;
    const std::string text = answer_text(r);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + text);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(text));
    EXPECT_TRUE(j.is_object());
  }
  EXPECT_GT(ended, 0);
}

TEST_F(ConstrainedTest, GreedyConstrainedIsDeterministic) {
  const Grammar grammar = Grammar::from_json_schema(kPersonSchema);
  Engine engine(loaded.model(), {});
  GenerationRequest a = request(grammar, 1, 200), b = request(grammar, 2, 200);
  a.sampling.temperature = b.sampling.temperature = 0.f;
  const GenerationResult ra = engine.generate(a);
  EXPECT_EQ(ra.tokens, engine.generate(b).tokens);
  EXPECT_TRUE(nlohmann::json::accept(answer_text(ra)));
}

TEST_F(ConstrainedTest, FreeUntilTheStartAfterToken) {
  // A tiny grammar the random model would never follow by itself.
  const Grammar grammar = Grammar::from_gbnf(R"(root ::= "yes" | "no")");
  const int32_t marker = tokenizer.encode("Reply").front();
  SamplerParams params;
  params.temperature = 1.f;
  Sampler sampler(params, {std::make_shared<const Grammar>(grammar), vocab, marker});
  const std::vector<float> flat(static_cast<size_t>(loaded.model().info().n_vocab), 0.f);
  std::vector<float> favour_marker = flat;
  favour_marker[static_cast<size_t>(marker)] = 100.f;
  // Before the marker anything goes: a flat distribution picks all sorts of tokens.
  std::vector<int32_t> before;
  for (int i = 0; i < 5; ++i) before.push_back(sampler.sample(flat));
  EXPECT_GT(std::ranges::count_if(before, [&](int32_t t) { return t != before[0]; }), 0);
  EXPECT_EQ(sampler.sample(favour_marker), marker);
  // After it, only the grammar: then only an end token once "yes"/"no" is complete.
  std::vector<int32_t> after;
  for (int i = 0; i < 4 && (after.empty() || !is_end(after.back())); ++i)
    after.push_back(sampler.sample(flat));
  ASSERT_TRUE(is_end(after.back()));
  after.pop_back();
  const std::string text = tokenizer.decode(after);
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  EXPECT_TRUE(sampler.constraint_can_end());
  // restart_constraint(): free again until the marker.
  sampler.restart_constraint();
  EXPECT_EQ(sampler.sample(favour_marker), marker);
}

TEST_F(ConstrainedTest, GrammarWithoutVocabularyIsRefused) {
  GrammarConstraint c;
  c.grammar = std::make_shared<const Grammar>(Grammar::json_object());
  EXPECT_THROW(Sampler(SamplerParams{}, c), Error);
}

}  // namespace
}  // namespace hostlm
