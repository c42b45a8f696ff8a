// The parse state of a GrammarMatcher: a set of parser stacks, as in a non-deterministic
// pushdown automaton. Stacks are hash-consed into a pool of (position, parent) nodes, so a
// stack is one integer, equal stacks are equal integers, and stacks share their tails; what
// follows a stack once its top character is consumed is computed once and memoized.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/ir.h"

namespace hostlm {
struct TokenBitmask;
}

namespace hostlm::grammar {

struct VocabTrie;

inline constexpr uint32_t kBottom = 0xFFFFFFFFu;  // the empty stack: the root is complete
// Item::cp of a partial UTF-8 sequence whose every completion is a valid code point in the
// set: the bits read so far no longer matter, so all such items are one (inside a JSON
// string, the thousands of partial CJK sequences of a trie walk become a single item set).
inline constexpr uint32_t kAnyCodePoint = 0xFFFFFFFFu;

// One live parse: a stack whose top is a character set, plus the UTF-8 sequence started
// towards that set but not finished yet.
struct Item {
  uint32_t stack = kBottom;
  uint32_t cp = 0;   // payload bits decoded so far
  uint8_t need = 0;  // continuation bytes still to come
  uint8_t tail = 0;  // continuation bytes of the whole sequence
  bool operator==(const Item&) const = default;
  bool operator<(const Item& o) const {
    return stack != o.stack ? stack < o.stack : cp != o.cp ? cp < o.cp : need < o.need;
  }
};

class MatcherState {
 public:
  explicit MatcherState(const CompiledGrammar& grammar);

  void reset();
  bool accept_bytes(std::string_view bytes);
  bool can_accept(std::string_view bytes);
  bool can_end() const;
  void allowed_tokens(const VocabTrie& trie, TokenBitmask& mask);
  size_t pool_size() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t pos;     // top: the next element to match; below: where to resume
    uint32_t parent;  // kBottom at the bottom
  };
  struct ItemsHash {
    size_t operator()(const std::vector<Item>& v) const {
      uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
      for (const Item& i : v) {
        h = (h ^ i.stack) * 0x100000001B3ull;
        h = (h ^ (uint64_t{i.cp} << 8 | i.need)) * 0x100000001B3ull;
      }
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  struct MaskEntry {
    std::vector<Item> key;
    std::vector<uint64_t> words;
    uint64_t used = 0;
  };

  uint32_t intern(uint32_t pos, uint32_t parent);
  // Adds to out every stack reachable from (pos, parent) without consuming a character, each
  // (pos, parent) once since clear_visited().
  void expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out);
  bool first_visit(uint64_t key);
  void clear_visited();
  // The stacks after the top character of `stack` is consumed (memoized).
  std::pair<const uint32_t*, size_t> successors(uint32_t stack);
  // Appends to out what `item` becomes after one more byte.
  void step(const Item& item, uint8_t byte, std::vector<Item>& out);
  void compact();
  // Item sets seen by trie walks, interned, with their transitions on each byte: the walk
  // is then a table lookup per trie node. A set's row: -1 not computed, -2 dead.
  int32_t intern_set(const std::vector<Item>& items);
  int32_t transition(int32_t set, uint8_t byte);
  void clear_sets();
  // Advances `items` over `bytes`; false (and `items` unusable) if every parse dies.
  bool advance(std::vector<Item>& items, std::string_view bytes);

  const CompiledGrammar* g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<uint32_t> memo_begin_;  // per stack id: into memo_data_, or kBottom if unknown
  std::vector<uint32_t> memo_len_;
  std::vector<uint32_t> memo_data_;
  // Scratch for expand(): what it has reached (a list while short, then also a set: an
  // object of many optional properties reaches thousands), and its work list.
  std::vector<uint64_t> visited_;
  std::unordered_set<uint64_t> visited_set_;
  std::vector<std::pair<uint32_t, uint32_t>> work_;
  std::vector<uint32_t> scratch_;
  std::vector<Item> items_;  // sorted, unique
  std::vector<Item> next_;
  std::vector<Item> probe_;
  std::vector<std::vector<Item>> sets_;
  std::vector<std::array<int32_t, 256>> transitions_;
  std::unordered_map<std::vector<Item>, int32_t, ItemsHash> set_index_;
  std::vector<int32_t> level_;  // the trie walk's set per depth
  std::vector<MaskEntry> mask_cache_;
  uint64_t clock_ = 0;
};

}  // namespace hostlm::grammar
