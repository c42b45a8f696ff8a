// The public face of the grammar room (hostlm/grammar.h).
#include "hostlm/grammar.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "grammar/ir.h"
#include "grammar/json_schema.h"
#include "grammar/matcher_state.h"
#include "grammar/nesting.h"
#include "grammar/vocab_trie.h"
#include "hostlm/error.h"
#include "hostlm/json_input.h"
#include "hostlm/tokenizer.h"

namespace hostlm {

Grammar::Grammar(std::shared_ptr<const grammar::CompiledGrammar> impl) : impl_(std::move(impl)) {}

Grammar Grammar::from_gbnf(std::string_view text, std::string_view root) {
  return Grammar(std::make_shared<const grammar::CompiledGrammar>(grammar::parse_gbnf(text, root)));
}

Grammar Grammar::from_json_schema(std::string_view schema_text) {
  return from_gbnf(json_schema_to_gbnf(schema_text));
}

namespace {

// Whether arrays and objects nest more than `limit` deep, found without recursion: dump()
// below recurses, and the value may come from anywhere.
bool nested_deeper_than(const nlohmann::json& value, int limit) {
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&value, 0}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (depth >= limit) return true;
    for (const auto& child : *v) todo.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace

Grammar Grammar::from_json_schema(const nlohmann::json& schema) {
  // A sub-schema is at most a few JSON levels below its parent; the converter bounds those.
  constexpr int kMaxJsonDepth = 4 * grammar::kMaxNesting;
  if (nested_deeper_than(schema, kMaxJsonDepth))
    throw Error("JSON Schema: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  return from_gbnf(grammar::schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump())));
}

Grammar Grammar::json_object() { return from_gbnf(json_object_gbnf()); }

std::string json_schema_to_gbnf(std::string_view schema_text) {
  nlohmann::ordered_json schema;
  try {
    schema = parse_input_json(schema_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("JSON Schema: not valid JSON: ") + e.what());
  } catch (const JsonTooDeep& e) {
    throw Error(std::string("JSON Schema: ") + e.what());
  }
  return grammar::schema_to_gbnf(schema);
}

std::string json_object_gbnf() { return grammar::json_object_gbnf(); }

std::string json_gbnf_rules() { return grammar::json_base_rules(); }

std::string gbnf_literal(std::string_view text) { return grammar::gbnf_literal(text); }

void TokenBitmask::reset(int32_t n_tokens, bool value) {
  size = n_tokens;
  words.assign((static_cast<size_t>(n_tokens) + 63) / 64, value ? ~uint64_t{0} : 0);
  if (value && n_tokens % 64 != 0) words.back() = (uint64_t{1} << (n_tokens % 64)) - 1;
}

int32_t TokenBitmask::count() const {
  int32_t n = 0;
  for (uint64_t w : words) n += std::popcount(w);
  return n;
}

namespace {

std::vector<int32_t> default_end_tokens(const Tokenizer& tokenizer) {
  std::vector<int32_t> ends;
  if (auto eos = tokenizer.eos_id()) ends.push_back(*eos);
  for (const char* name : {"<|im_end|>", "<|endoftext|>"}) {
    if (auto id = tokenizer.token_id(name)) ends.push_back(*id);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

}  // namespace

GrammarVocab::GrammarVocab(const Tokenizer& tokenizer, std::vector<int32_t> end_tokens)
    : trie_(std::make_unique<grammar::VocabTrie>()) {
  if (end_tokens.empty()) end_tokens = default_end_tokens(tokenizer);
  const int32_t n = tokenizer.vocab_size();
  trie_->bytes.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    // A special token stands for a control signal, not for its text.
    if (!tokenizer.is_special(id))
      trie_->bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
  }
  for (int32_t id : end_tokens) {
    if (id < 0 || id >= n)
      throw Error("grammar: end token id " + std::to_string(id) + " is outside the vocabulary");
    trie_->bytes[static_cast<size_t>(id)].clear();
  }
  trie_->end_tokens = std::move(end_tokens);
  trie_->build();
}

GrammarVocab::GrammarVocab(const std::vector<std::string>& token_bytes,
                           std::vector<int32_t> end_tokens)
    : trie_(std::make_unique<grammar::VocabTrie>()) {
  trie_->bytes = token_bytes;
  for (int32_t id : end_tokens) {
    if (id < 0 || static_cast<size_t>(id) >= token_bytes.size()) {
      throw Error("grammar: end token id " + std::to_string(id) + " is outside the vocabulary");
    }
    trie_->bytes[static_cast<size_t>(id)].clear();
  }
  trie_->end_tokens = std::move(end_tokens);
  trie_->build();
}

GrammarVocab::~GrammarVocab() = default;
int32_t GrammarVocab::size() const { return static_cast<int32_t>(trie_->bytes.size()); }
const std::vector<int32_t>& GrammarVocab::end_tokens() const { return trie_->end_tokens; }
const std::string& GrammarVocab::token_bytes(int32_t id) const {
  return trie_->bytes.at(static_cast<size_t>(id));
}

GrammarMatcher::GrammarMatcher(Grammar grammar, std::shared_ptr<const GrammarVocab> vocab)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      state_(std::make_unique<grammar::MatcherState>(grammar_.compiled())) {
  if (!vocab_) throw Error("grammar: GrammarMatcher needs a vocabulary");
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;
GrammarMatcher::GrammarMatcher(const GrammarMatcher& other)
    : grammar_(other.grammar_),
      vocab_(other.vocab_),
      state_(std::make_unique<grammar::MatcherState>(*other.state_)) {}

bool GrammarMatcher::accept_bytes(std::string_view bytes) { return state_->accept_bytes(bytes); }

bool GrammarMatcher::accept_token(int32_t id) {
  const auto& trie = vocab_->trie();
  if (id < 0 || static_cast<size_t>(id) >= trie.bytes.size()) return false;
  if (std::find(trie.end_tokens.begin(), trie.end_tokens.end(), id) != trie.end_tokens.end()) {
    return can_end();
  }
  if (!trie.in_trie[static_cast<size_t>(id)]) return false;
  return state_->accept_bytes(trie.bytes[static_cast<size_t>(id)]);
}

bool GrammarMatcher::can_accept_bytes(std::string_view bytes) { return state_->can_accept(bytes); }

bool GrammarMatcher::can_end() const { return state_->can_end(); }

void GrammarMatcher::allowed_tokens(TokenBitmask& mask) {
  state_->allowed_tokens(vocab_->trie(), mask);
}

void GrammarMatcher::reset() { state_->reset(); }

}  // namespace hostlm
