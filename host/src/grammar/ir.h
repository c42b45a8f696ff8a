// The compiled form of a grammar, shared by the parser, the matcher and the tests.
// A grammar is a list of rules; each rule a list of alternatives; each alternative a run of
// elements in one flat array, closed by an End element. Positions in that array are what the
// matcher's parse stacks hold, so an alternative's elements must stay contiguous.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hostlm::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of Unicode code points as sorted, disjoint, non-adjacent closed ranges.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  std::array<uint64_t, 2> ascii{};  // the ranges below 128 as bits: the common case, no search

  void add(uint32_t lo, uint32_t hi) { ranges.emplace_back(lo, hi); }
  // Sorts and merges the ranges, complements them when `negate`, and fills `ascii`.
  void finish(bool negate);
  bool contains(uint32_t cp) const;
  bool intersects(uint32_t lo, uint32_t hi) const;  // any code point in [lo, hi]
  bool covers(uint32_t lo, uint32_t hi) const;      // every code point in [lo, hi]
};

enum class ElemKind : uint8_t { End, Chars, Rule };

struct Elem {
  ElemKind kind = ElemKind::End;
  uint32_t arg = 0;  // Chars: index into sets; Rule: index into rules
};

struct Rule {
  std::string name;
  std::vector<uint32_t> alts;  // start positions in elems
  int line = 0, col = 0;       // where it was defined, or where the generating construct was
};

struct CompiledGrammar {
  std::vector<Elem> elems;
  std::vector<CharSet> sets;
  std::vector<Rule> rules;
  uint32_t root = 0;
};

// Parses GBNF text (see grammar.h for the syntax) and compiles it; throws hostlm::Error.
CompiledGrammar parse_gbnf(std::string_view text, std::string_view root);

}  // namespace hostlm::grammar
