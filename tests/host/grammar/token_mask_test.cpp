// allowed_tokens on the real Qwen3 vocabulary (151,669 ids): the trie walk agrees with a
// brute-force check of every token, and random generations under a JSON Schema always
// parse and validate. Also prints how long a mask takes in typical states.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

#include "grammar/vocab_trie.h"
#include "hostlm/tokenizer.h"
#include "test_support.h"

namespace hostlm {
namespace {

const Tokenizer& qwen3() {
  static const Tokenizer tok = Tokenizer::load(test::qwen3_tokenizer_json());
  return tok;
}

std::shared_ptr<const GrammarVocab> qwen3_vocab() {
  static const auto vocab = std::make_shared<const GrammarVocab>(qwen3());
  return vocab;
}

// The mask by trying every token on its own.
TokenBitmask brute_force(const GrammarMatcher& m) {
  const auto& vocab = *qwen3_vocab();
  TokenBitmask mask;
  mask.reset(vocab.size(), false);
  GrammarMatcher probe = m;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const bool end = std::find(vocab.end_tokens().begin(), vocab.end_tokens().end(), id) !=
                     vocab.end_tokens().end();
    if (end ? probe.can_end()
            : (!vocab.token_bytes(id).empty() && probe.can_accept_bytes(vocab.token_bytes(id)))) {
      mask.set(id);
    }
  }
  return mask;
}

// A random allowed token; sometimes only among short ones, so that generations close their
// strings and arrays in reasonable time.
int32_t pick(const TokenBitmask& mask, std::mt19937& rng) {
  std::vector<int32_t> all, short_ones;
  const auto& vocab = *qwen3_vocab();
  for (int32_t id = 0; id < mask.size; ++id) {
    if (!mask.test(id)) continue;
    all.push_back(id);
    if (vocab.token_bytes(id).size() <= 2) short_ones.push_back(id);
  }
  const auto& from = (!short_ones.empty() && rng() % 3 == 0) ? short_ones : all;
  return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
}

// Thread CPU time: the machine running the tests is shared, so wall time is noisy.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

const char* kSchemas[] = {
    R"G({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":150},
        "email":{"type":"string","pattern":"^[a-z]+@[a-z]+\\.(com|org)$"},"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3}},
        "required":["name","age"],"additionalProperties":false})G",
    R"G({"type":"object","properties":{"kind":{"const":"point"},"xy":{"prefixItems":[{"type":"number","minimum":-1,"maximum":1},
        {"type":"number"}],"items":false},"label":{"type":["string","null"],"minLength":1,"maxLength":5}},"required":["kind","xy","label"]})G",
    R"G({"$defs":{"tree":{"type":"object","properties":{"v":{"type":"integer","maximum":-5},
        "kids":{"type":"array","items":{"$ref":"#/$defs/tree"},"maxItems":2}},"required":["v"]}},
        "type":"object","properties":{"root":{"$ref":"#/$defs/tree"},"ok":{"type":"boolean"}},"required":["root","ok"]})G",
    R"G({"type":"object","properties":{"answer":{"anyOf":[{"type":"integer","exclusiveMinimum":10},{"type":"string","maxLength":4},
        {"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}]},"when":{"type":"string","format":"date"}},"required":["answer","when"]})G",
};

TEST(TokenMask, TrieWalkMatchesBruteForce) {
  const Grammar g = Grammar::from_json_schema(std::string_view(kSchemas[0]));
  std::mt19937 rng(7);
  int states = 0;
  for (int run = 0; run < 3; ++run) {
    GrammarMatcher m(g, qwen3_vocab());
    TokenBitmask mask;
    for (int step = 0; step < 60 && !m.can_end(); ++step) {
      m.allowed_tokens(mask);
      if (step % 6 == 0) {
        const TokenBitmask expected = brute_force(m);
        ASSERT_EQ(mask.words, expected.words)
            << "run " << run << " step " << step << ": trie allows " << mask.count()
            << ", brute force " << expected.count();
        ++states;
      }
      ASSERT_GT(mask.count(), 0);
      ASSERT_TRUE(m.accept_token(pick(mask, rng)));
    }
  }
  EXPECT_GE(states, 6);
}

TEST(TokenMask, GbnfStatesMatchBruteForce) {
  // States mid-way through a multi-byte character and in a negated class.
  const Grammar g =
      Grammar::from_gbnf(R"G(root ::= "中文" [^a-z\u4e00-\u4fff]{2,5} ("é"|"😀")* "!")G");
  GrammarMatcher m(g, qwen3_vocab());
  for (const std::string& part : {std::string(""), std::string("\xE4"), std::string("\xB8\xAD"),
                                  std::string("文"), std::string("X€"), std::string("\xF0\x9F")}) {
    ASSERT_TRUE(m.accept_bytes(part)) << part;
    TokenBitmask mask;
    m.allowed_tokens(mask);
    EXPECT_EQ(mask.words, brute_force(m).words) << "after '" << part << "'";
  }
}

TEST(TokenMask, RandomGenerationsValidate) {
  for (size_t k = 0; k < std::size(kSchemas); ++k) {
    const auto schema = nlohmann::json::parse(kSchemas[k]);
    const Grammar g = Grammar::from_json_schema(std::string_view(kSchemas[k]));
    int finished = 0;
    for (uint32_t seed = 0; seed < 50; ++seed) {
      std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(k));
      GrammarMatcher m(g, qwen3_vocab());
      TokenBitmask mask;
      std::vector<int32_t> ids;
      while (!m.can_end() && ids.size() < 2000) {
        m.allowed_tokens(mask);
        ASSERT_GT(mask.count(), 0) << "dead end, schema " << k << " seed " << seed;
        const int32_t id = pick(mask, rng);
        ASSERT_TRUE(m.accept_token(id));
        ids.push_back(id);
      }
      if (!m.can_end()) continue;
      ++finished;
      const std::string text = qwen3().decode(ids);
      nlohmann::json value;
      ASSERT_NO_THROW(value = nlohmann::json::parse(text))
          << "schema " << k << " seed " << seed << ": " << text;
      EXPECT_EQ(test::validate(value, schema, schema), "")
          << "schema " << k << " seed " << seed << ": " << text;
    }
    EXPECT_GE(finished, 45) << "schema " << k;
  }
}

TEST(TokenMask, Timing) {
  const Grammar g = Grammar::from_json_schema(std::string_view(kSchemas[0]));
  const Grammar any = Grammar::json_object();
  struct Case {
    const char* what;
    const Grammar* grammar;
    std::string prefix;
  };
  const Case cases[] = {
      {"start of object", &g, " "},
      {"after a key", &g, "{\"name\": "},
      {"inside a maxLength string", &g, "{\"name\": \"Jo"},
      {"inside an integer range", &g, "{\"name\": \"Jo\", \"age\": 1"},
      {"inside a pattern string", &g, "{\"name\": \"Jo\", \"age\": 1, \"email\": \"ab"},
      {"json_object: inside a free string", &any, "{\"text\": \"Hello wor"},
      {"json_object: after a value", &any, "{\"a\": [1, {\"b\": true}"},
  };
  const double b0 = cpu_ms();
  const GrammarVocab rebuilt(qwen3());
  std::printf("[ timing ] GrammarVocab build: %.1f ms, %zu trie nodes for %d ids\n", cpu_ms() - b0,
              rebuilt.trie().nodes.size(), rebuilt.size());
  const auto vocab = qwen3_vocab();
  for (const Case& c : cases) {
    TokenBitmask mask;
    constexpr int kReps = 5;
    double cold_ms = 0;
    for (int r = 0; r < kReps; ++r) {
      GrammarMatcher fresh(*c.grammar, vocab);  // nothing cached: the first mask of a request
      ASSERT_TRUE(fresh.accept_bytes(c.prefix)) << c.what;
      const double t0 = cpu_ms();
      fresh.allowed_tokens(mask);
      cold_ms += cpu_ms() - t0;
    }
    // Warm: the matcher computed the previous state's mask, then took one more character
    // (the steady state of generation, when the state differs from every cached one).
    GrammarMatcher m(*c.grammar, vocab);
    ASSERT_TRUE(m.accept_bytes(c.prefix.substr(0, c.prefix.size() - 1)));
    m.allowed_tokens(mask);
    ASSERT_TRUE(m.accept_bytes(c.prefix.substr(c.prefix.size() - 1)));
    double t0 = cpu_ms();
    m.allowed_tokens(mask);
    const double warm_ms = cpu_ms() - t0;
    t0 = cpu_ms();
    m.allowed_tokens(mask);  // the same state again: served from the mask cache
    const double cached_ms = cpu_ms() - t0;
    std::printf("[ timing ] %-36s allowed %6d  cold %6.3f ms  warm %6.3f ms  same state %6.3f ms\n",
                c.what, mask.count(), cold_ms / kReps, warm_ms, cached_ms);
  }
}

}  // namespace
}  // namespace hostlm
