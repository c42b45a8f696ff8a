// Picks the next token from logits: greedy at temperature 0, else temperature, top-k,
// typical, top-p and min-p sampling from a seeded generator (same seed, same logits -> same
// tokens). Logit biases and the penalties (repeat, presence, frequency) first adjust the
// logits, greedy included.
//
// Order, as llama.cpp and Ollama apply it: logit bias, repeat penalty, presence and
// frequency penalties, top-k, temperature + softmax, typical, top-p, min-p. The defaults of
// every field after the first four switch it off, so a sampler made with only those picks
// exactly what it did before the others existed.
//
// A grammar constraint, when set, keeps the picked tokens inside a grammar (JSON mode, a JSON
// Schema, GBNF). The sampler first picks as if unconstrained and only when the grammar
// rejects that token computes the full mask of allowed tokens and picks again among them:
// inside free text (string contents) the first pick almost always fits, so the mask over the
// whole vocabulary is rarely needed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "hostlm/grammar.h"

namespace hostlm {

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;       // 0: off
  float top_p = 0.95f;  // 1: off
  uint64_t seed = 0;
  // Drops tokens whose probability is below min_p times the most likely token's. 0: off.
  float min_p = 0.f;
  // Tokens seen among the last repeat_last_n get their logit divided by repeat_penalty when
  // positive and multiplied by it when negative (llama.cpp / Ollama). 1: off.
  float repeat_penalty = 1.f;
  int repeat_last_n = 64;  // 0: off
  // Locally typical sampling: keeps the tokens whose surprise (-log p) is closest to the
  // distribution's entropy, until they hold typical_p of the probability. 1: off.
  float typical_p = 1.f;
  // OpenAI's penalties over the same window: a seen token's logit drops by presence_penalty
  // once and by frequency_penalty per occurrence. 0: off.
  float presence_penalty = 0.f;
  float frequency_penalty = 0.f;
  // Added to the logit of a token id before anything else (-infinity bans it).
  std::map<int32_t, float> logit_bias;
};

// A grammar the generated tokens must follow. End tokens (the vocabulary's) are allowed
// exactly when the grammar can end, and are the only choice once nothing can continue it;
// the caller stops generating on them.
struct GrammarConstraint {
  std::shared_ptr<const Grammar> grammar;  // null: no constraint
  std::shared_ptr<const GrammarVocab> vocab;
  // Sampling is free until this token has been picked, so that a thinking model's reasoning
  // is not held to the answer's grammar: the id of </think>. -1: constrained from the start.
  int32_t start_after = -1;

  explicit operator bool() const { return grammar != nullptr; }
};

class Sampler {
 public:
  // Throws hostlm::Error for min_p outside [0, 1], typical_p outside (0, 1], repeat_penalty
  // <= 0, a negative repeat_last_n, a negative or NaN-biased token id, and for a constraint
  // with a grammar but no vocabulary. Temperature <= 0 means greedy.
  explicit Sampler(const SamplerParams& params, GrammarConstraint constraint = {});

  // Also records the returned token as seen, for the repeat penalty.
  int32_t sample(std::span<const float> logits);

  // How many of a row's best logits (best_logits.h) the next sample() reads when they are all
  // it reads: 1 for greedy and top_k for top-k sampling, without a grammar, a logit bias or a
  // penalty; 0 when it needs the whole row of n_vocab logits.
  int32_t best_logits_needed(int64_t n_vocab) const;
  // What sample() would pick from the whole row, given the row's best_logits_needed() best
  // (values and ids, best first, as best_logits() gives them). Records the token as seen.
  int32_t sample_best(std::span<const float> values, std::span<const int32_t> ids);

  // Records tokens the sampler did not pick (the prompt) as seen.
  void accept(int32_t token);
  void accept(std::span<const int32_t> tokens);
  // Forgets the seen tokens (a new conversation); the generator keeps its state.
  void clear_history();

  // The grammar starts over (and waits again for start_after): call before each answer.
  void restart_constraint();
  const GrammarConstraint& constraint() const { return constraint_; }
  // Whether the tokens picked since the constraint started form a complete sentence of the
  // grammar (true without a constraint).
  bool constraint_can_end() const;

  const SamplerParams& params() const { return params_; }

 private:
  bool penalizing() const {
    return params_.repeat_last_n > 0 &&
           (params_.repeat_penalty != 1.f || params_.presence_penalty != 0.f ||
            params_.frequency_penalty != 0.f);
  }
  // The seen tokens, each once with its count, sorted by id; in seen_.
  void count_recent();
  // A logit after the bias and, for a seen token (`count` > 0), the penalties.
  float adjusted(float logit, int count) const;
  int seen_count(int32_t token) const;
  // Keeps the first `keep` candidates (weights, descending) that typical sampling keeps, in
  // the same order; returns how many.
  size_t typical_filter(size_t keep, double total);
  // The ids below n whose logit a bias or penalty changes, sorted, with their adjusted
  // logits; in adjusted_.
  void collect_adjusted(std::span<const float> logits, int32_t n, bool penalize);
  // top_p, min_p and the draw over candidates_[0, n), of which [0, sorted) are in sampling
  // order and every later one worse, and [0, weighted) hold weights (logits beyond); total:
  // their sum, or negative when not taken yet. Candidates come into order a growing prefix
  // at a time, only as far as top_p, min_p and the draw walk, so that without top-k not all
  // 248K of them are sorted (that took tens of milliseconds per token); the draws are a full
  // sort's, and the sum of all weights, where needed, is taken in the array's order.
  int32_t draw(size_t n, size_t sorted, size_t weighted, double total);
  // Picks a token without recording it; with a mask, only among the tokens it allows.
  int32_t pick(std::span<const float> logits, const TokenBitmask* mask);
  // Feeds `token` to the grammar; false (and nothing changes) when the grammar rejects it.
  bool grammar_accepts(int32_t token);

  SamplerParams params_;
  std::mt19937_64 rng_;
  // Reused between calls so that sampling allocates nothing once warmed up.
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<float> penalized_;                      // greedy with a penalty: the adjusted logits
  std::vector<std::pair<int32_t, float>> adjusted_;   // collect_adjusted
  std::vector<std::pair<float, int32_t>> next_best_;  // draw_from_all
  std::vector<int32_t> recent_;                       // ring of the last repeat_last_n seen tokens
  std::vector<int32_t> recent_sorted_;
  std::vector<std::pair<int32_t, int>> seen_;       // token, count in the window
  std::vector<std::pair<double, size_t>> typical_;  // reused by typical_filter
  size_t recent_next_ = 0;                          // where the ring writes next
  GrammarConstraint constraint_;
  std::optional<GrammarMatcher> matcher_;  // set when constraint_ has a grammar
  bool constraint_started_ = false;        // start_after has been picked (or is -1)
  TokenBitmask mask_;                      // reused: the allowed tokens after a rejection
};

}  // namespace hostlm
