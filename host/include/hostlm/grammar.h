// Grammar-constrained decoding: grammars in llama.cpp's GBNF syntax or from a JSON Schema,
// compiled once, then matched incrementally against generated text to say which tokens may
// come next.
//
// GBNF, as accepted here:
//   name ::= alternatives          rules; `root` is the start rule (or the one named)
//   a b | c                        sequence, alternation (newlines are white space)
//   ( ... )                        grouping
//   x* x+ x? x{m} x{m,} x{m,n}     repetition
//   "text"                         literals; escapes \n \r \t \\ \" \' \[ \] \xNN \uNNNN
//                                  \UNNNNNNNN
//   [a-z_] [^"\\]  .               character classes, negated classes, any character
//   # comment                      to the end of the line
// Matching is over Unicode code points; text is UTF-8. Left recursion is refused.
//
// Threads: Grammar and GrammarVocab are immutable and may be shared freely; a GrammarMatcher
// belongs to one request and one thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hostlm {

class Tokenizer;

namespace grammar {
struct CompiledGrammar;
struct VocabTrie;
class MatcherState;
}  // namespace grammar

// A compiled grammar. Every constructor throws hostlm::Error on a malformed input: GBNF
// errors give line:column, JSON Schema errors the keyword and its JSON pointer.
class Grammar {
 public:
  static Grammar from_gbnf(std::string_view text, std::string_view root = "root");
  // Property order follows the schema text, so prefer the text overload; the json overload
  // sees its objects in nlohmann::json's (sorted) key order.
  static Grammar from_json_schema(std::string_view schema_text);
  static Grammar from_json_schema(const nlohmann::json& schema);
  // Any JSON object (Ollama format:"json", OpenAI response_format json_object).
  static Grammar json_object();

  const grammar::CompiledGrammar& compiled() const { return *impl_; }

 private:
  explicit Grammar(std::shared_ptr<const grammar::CompiledGrammar> impl);
  std::shared_ptr<const grammar::CompiledGrammar> impl_;
};

// The GBNF text behind the JSON constructors, for inspection and for --grammar users.
// Differences from the schema's own meaning, all of them stricter (what is generated always
// validates): optional properties come in listed order after the required ones; without
// additionalProperties no extra properties are emitted; numbers have at most 16 integer
// and 16 fraction digits; oneOf is treated as anyOf; at most a few white space characters
// are allowed between tokens. One looser point: keys allowed by additionalProperties
// (true or a schema) are not checked against the declared property names.
std::string json_schema_to_gbnf(std::string_view schema_text);
std::string json_object_gbnf();
// Building blocks for grammars written elsewhere (a chat format's tool-call grammar): the
// JSON rules json-value, json-object, json-array, json-string, json-number, json-boolean,
// json-null and ws, and `text` as a quoted GBNF literal (escapes as needed).
std::string json_gbnf_rules();
std::string gbnf_literal(std::string_view text);

// One bit per token id: bit set = allowed.
struct TokenBitmask {
  std::vector<uint64_t> words;
  int32_t size = 0;

  void reset(int32_t n_tokens, bool value);
  void set(int32_t id) { words[id >> 6] |= uint64_t{1} << (id & 63); }
  bool test(int32_t id) const { return (words[id >> 6] >> (id & 63)) & 1; }
  int32_t count() const;
};

// The vocabulary as the matcher needs it: a trie of every token's bytes, built once per
// tokenizer (a few hundred ms for 150K tokens) and shared by all matchers.
class GrammarVocab {
 public:
  // Special tokens are never allowed, except end tokens, which are allowed exactly when the
  // grammar can end. `end_tokens` empty: the tokenizer's EOS plus <|im_end|> and
  // <|endoftext|> where present.
  explicit GrammarVocab(const Tokenizer& tokenizer, std::vector<int32_t> end_tokens = {});
  // For tests: token id i has bytes token_bytes[i]; "" marks a token that is never allowed.
  GrammarVocab(const std::vector<std::string>& token_bytes, std::vector<int32_t> end_tokens);
  ~GrammarVocab();

  int32_t size() const;
  const std::vector<int32_t>& end_tokens() const;
  const std::string& token_bytes(int32_t id) const;
  const grammar::VocabTrie& trie() const { return *trie_; }

 private:
  std::unique_ptr<grammar::VocabTrie> trie_;
};

// The incremental parse of one generation. A rejected input leaves the state unchanged.
class GrammarMatcher {
 public:
  GrammarMatcher(Grammar grammar, std::shared_ptr<const GrammarVocab> vocab);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
  GrammarMatcher(const GrammarMatcher& other);  // an independent copy of the parse state

  // Advances over raw bytes; a UTF-8 sequence may be split across calls. False: rejected.
  bool accept_bytes(std::string_view bytes);
  // The token's bytes; an end token is accepted (and changes nothing) only when can_end().
  bool accept_token(int32_t id);
  // Whether accept_bytes(bytes) would succeed; changes nothing.
  bool can_accept_bytes(std::string_view bytes);
  // Whether the text so far is a complete sentence of the grammar.
  bool can_end() const;
  // Fills `mask` (resized to the vocabulary) with the tokens accept_token would take now.
  void allowed_tokens(TokenBitmask& mask);
  void reset();  // back to the start of the grammar

 private:
  Grammar grammar_;
  std::shared_ptr<const GrammarVocab> vocab_;
  std::unique_ptr<grammar::MatcherState> state_;
};

}  // namespace hostlm
