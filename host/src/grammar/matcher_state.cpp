#include "grammar/matcher_state.h"

#include <algorithm>
#include <string>

#include "grammar/utf8.h"
#include "grammar/vocab_trie.h"
#include "hostlm/error.h"
#include "hostlm/grammar.h"

namespace hostlm::grammar {
namespace {

// Beyond this many pool nodes the pool is rebuilt from the live stacks only, so a long
// generation does not keep every stack it ever saw.
constexpr size_t kCompactAt = size_t{1} << 20;
// Bounds for grammars so ambiguous that every position is reachable from every other (a long
// run of optional elements, "a"?{100000}): one expansion reaching more stacks than this, or
// the memoized successor lists passing this many entries (16 MiB), ends the match with an
// error instead of taking the memory and the time. A JSON object of 4,000 optional properties
// stays inside both.
constexpr size_t kMaxExpansion = size_t{1} << 15;
constexpr size_t kMaxMemoEntries = size_t{1} << 22;
constexpr size_t kMaskCacheSize = 8;
// Interned item sets are 1 KiB each with their transition row; start over beyond this.
constexpr size_t kMaxSets = 8192;

void sort_unique(std::vector<Item>& v, size_t from) {
  if (v.size() - from < 2) return;
  std::sort(v.begin() + static_cast<long>(from), v.end());
  v.erase(std::unique(v.begin() + static_cast<long>(from), v.end()), v.end());
}

}  // namespace

MatcherState::MatcherState(const CompiledGrammar& grammar) : g_(&grammar) { reset(); }

void MatcherState::reset() {
  nodes_.clear();
  index_.clear();
  memo_begin_.clear();
  memo_len_.clear();
  memo_data_.clear();
  mask_cache_.clear();
  clear_sets();
  clear_visited();
  scratch_.clear();
  for (uint32_t alt : g_->rules[g_->root].alts) expand(alt, kBottom, scratch_);
  items_.clear();
  for (uint32_t s : scratch_) items_.push_back({s, 0, 0, 0});
  sort_unique(items_, 0);
}

uint32_t MatcherState::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto [it, fresh] = index_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent});
  return it->second;
}

bool MatcherState::first_visit(uint64_t key) {
  if (visited_set_.empty()) {
    if (std::find(visited_.begin(), visited_.end(), key) != visited_.end()) return false;
    visited_.push_back(key);
    if (visited_.size() == 64) visited_set_.insert(visited_.begin(), visited_.end());
    return true;
  }
  return visited_set_.insert(key).second;
}

void MatcherState::clear_visited() {
  visited_.clear();
  visited_set_.clear();
}

void MatcherState::expand(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out) {
  // Depth first through a work list rather than by recursion: a run of nullable elements (an
  // object of many optional properties, "a"?{100000}) is as deep as it is long, and recursing
  // overflowed the stack. Alternatives go on the list last first, so the visiting order, and
  // with it the stack ids interned, is the recursive order.
  work_.clear();
  work_.emplace_back(pos, parent);
  size_t visits = 0;
  while (!work_.empty()) {
    if (++visits > kMaxExpansion)
      throw Error("grammar: too ambiguous to match (more than " + std::to_string(kMaxExpansion) +
                  " parse stacks reached at one point)");
    const auto [p, par] = work_.back();
    work_.pop_back();
    // A rule reached twice from the same place (a diamond of nullable rules) adds nothing new.
    if (!first_visit((uint64_t{p} << 32) | par)) continue;
    const Elem e = g_->elems[p];
    switch (e.kind) {
      case ElemKind::Chars:
        out.push_back(intern(p, par));
        break;
      case ElemKind::End:
        if (par == kBottom) {
          if (std::find(out.begin(), out.end(), kBottom) == out.end()) out.push_back(kBottom);
        } else {
          const Node up = nodes_[par];
          work_.emplace_back(up.pos, up.parent);
        }
        break;
      case ElemKind::Rule: {
        // A reference last in its alternative returns straight to the caller's frame, so
        // right recursion (every `x*`) keeps the parse stacks flat.
        const uint32_t ret = p + 1;
        const uint32_t base = g_->elems[ret].kind == ElemKind::End ? par : intern(ret, par);
        const auto& alts = g_->rules[e.arg].alts;
        for (auto alt = alts.rbegin(); alt != alts.rend(); ++alt) work_.emplace_back(*alt, base);
        break;
      }
    }
  }
}

std::pair<const uint32_t*, size_t> MatcherState::successors(uint32_t stack) {
  if (stack >= memo_begin_.size()) {
    memo_begin_.resize(nodes_.size(), kBottom);
    memo_len_.resize(nodes_.size(), 0);
  }
  if (memo_begin_[stack] == kBottom) {
    const Node n = nodes_[stack];
    clear_visited();
    scratch_.clear();
    expand(n.pos + 1, n.parent, scratch_);
    std::sort(scratch_.begin(), scratch_.end());
    if (memo_data_.size() + scratch_.size() > kMaxMemoEntries)
      throw Error("grammar: too ambiguous to match (its successor tables passed 16 MiB)");
    memo_begin_[stack] = static_cast<uint32_t>(memo_data_.size());
    memo_len_[stack] = static_cast<uint32_t>(scratch_.size());
    memo_data_.insert(memo_data_.end(), scratch_.begin(), scratch_.end());
  }
  return {memo_data_.data() + memo_begin_[stack], memo_len_[stack]};
}

void MatcherState::step(const Item& item, uint8_t byte, std::vector<Item>& out) {
  if (item.stack == kBottom) return;
  const CharSet& set = g_->sets[g_->elems[nodes_[item.stack].pos].arg];
  uint32_t cp;
  int tail = item.tail;
  int need;
  if (item.need == 0) {
    tail = utf8_tail_length(byte);
    if (tail < 0) return;
    cp = utf8_lead_bits(byte, tail);
    need = tail;
  } else {
    if ((byte & 0xC0) != 0x80) return;
    need = item.need - 1;
    if (item.cp == kAnyCodePoint) {
      if (need > 0) {
        out.push_back({item.stack, kAnyCodePoint, static_cast<uint8_t>(need), item.tail});
        return;
      }
      const auto [next, count] = successors(item.stack);
      for (size_t i = 0; i < count; ++i) out.push_back({next[i], 0, 0, 0});
      return;
    }
    cp = (item.cp << 6) | (byte & 0x3F);
  }
  if (need > 0) {
    // Prune a partial sequence as soon as no code point it can still become is in the set.
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    const uint32_t first = cp << (6 * need);  // the completions are [first, hi]
    const uint32_t lo = std::max(first, kMin[tail]);
    const uint32_t hi = first | ((1u << (6 * need)) - 1);
    if (lo > hi || !set.intersects(lo, hi)) return;
    // When every completion is valid (no overlong form, surrogate or value past U+10FFFF)
    // and in the set, the sequence will be accepted whatever comes: forget its bits.
    const bool all_valid =
        first >= kMin[tail] && hi <= kMaxCodePoint && (hi < 0xD800 || first > 0xDFFF);
    // (Its length no longer matters either: only the continuation bytes still to come.)
    if (all_valid && set.covers(first, hi))
      out.push_back({item.stack, kAnyCodePoint, static_cast<uint8_t>(need), 0});
    else
      out.push_back({item.stack, cp, static_cast<uint8_t>(need), static_cast<uint8_t>(tail)});
    return;
  }
  if (!utf8_valid_scalar(cp, tail) || !set.contains(cp)) return;
  const auto [next, count] = successors(item.stack);
  // `next` points into memo_data_, which nothing below can grow.
  for (size_t i = 0; i < count; ++i) out.push_back({next[i], 0, 0, 0});
}

bool MatcherState::advance(std::vector<Item>& items, std::string_view bytes) {
  for (char c : bytes) {
    next_.clear();
    for (const Item& item : items) step(item, static_cast<uint8_t>(c), next_);
    if (next_.empty()) return false;
    sort_unique(next_, 0);
    items.swap(next_);
  }
  return true;
}

bool MatcherState::accept_bytes(std::string_view bytes) {
  probe_ = items_;
  if (!advance(probe_, bytes)) return false;
  items_.swap(probe_);
  if (nodes_.size() > kCompactAt) compact();
  return true;
}

bool MatcherState::can_accept(std::string_view bytes) {
  probe_ = items_;
  return advance(probe_, bytes);
}

bool MatcherState::can_end() const {
  return std::any_of(items_.begin(), items_.end(),
                     [](const Item& i) { return i.stack == kBottom; });
}

void MatcherState::allowed_tokens(const VocabTrie& trie, TokenBitmask& mask) {
  const auto n_tokens = static_cast<int32_t>(trie.bytes.size());
  for (MaskEntry& e : mask_cache_) {
    if (e.key == items_) {
      e.used = ++clock_;
      mask.size = n_tokens;
      mask.words = e.words;
      return;
    }
  }
  mask.reset(n_tokens, false);
  if (sets_.size() > kMaxSets) clear_sets();
  level_.assign(size_t{trie.max_depth} + 1, 0);
  level_[0] = intern_set(items_);
  const TrieNode* nodes = trie.nodes.data();
  const auto n_nodes = static_cast<uint32_t>(trie.nodes.size());
  for (uint32_t i = 1; i < n_nodes;) {
    const TrieNode& nd = nodes[i];
    int32_t next = transitions_[static_cast<size_t>(level_[nd.depth - 1])][nd.byte];
    if (next == -1) next = transition(level_[nd.depth - 1], nd.byte);
    if (next < 0) {
      i = nd.next;  // no parse survives this prefix: skip every token that starts with it
      continue;
    }
    for (uint32_t t = 0; t < nd.tok_count; ++t) mask.set(trie.token_ids[nd.tok_begin + t]);
    level_[nd.depth] = next;
    ++i;
  }
  if (can_end()) {
    for (int32_t id : trie.end_tokens) mask.set(id);
  }
  if (mask_cache_.size() < kMaskCacheSize) {
    mask_cache_.push_back({items_, mask.words, ++clock_});
  } else {
    auto oldest =
        std::min_element(mask_cache_.begin(), mask_cache_.end(),
                         [](const MaskEntry& a, const MaskEntry& b) { return a.used < b.used; });
    *oldest = {items_, mask.words, ++clock_};
  }
}

int32_t MatcherState::intern_set(const std::vector<Item>& items) {
  auto [it, fresh] = set_index_.emplace(items, static_cast<int32_t>(sets_.size()));
  if (fresh) {
    sets_.push_back(items);
    std::array<int32_t, 256> row;
    row.fill(-1);
    transitions_.push_back(row);
  }
  return it->second;
}

int32_t MatcherState::transition(int32_t set, uint8_t byte) {
  next_.clear();
  for (const Item& item : sets_[static_cast<size_t>(set)]) step(item, byte, next_);
  int32_t result = -2;
  if (!next_.empty()) {
    sort_unique(next_, 0);
    result = intern_set(next_);
  }
  transitions_[static_cast<size_t>(set)][byte] = result;
  return result;
}

void MatcherState::clear_sets() {
  sets_.clear();
  transitions_.clear();
  set_index_.clear();
}

void MatcherState::compact() {
  std::vector<Node> old = std::move(nodes_);
  nodes_.clear();
  index_.clear();
  memo_begin_.clear();
  memo_len_.clear();
  memo_data_.clear();
  mask_cache_.clear();
  clear_sets();
  std::unordered_map<uint32_t, uint32_t> moved;
  moved.emplace(kBottom, kBottom);
  // A stack is a parent chain that can be as long as the input is deep, so each chain is walked
  // with a list rather than recursion: up to the first node already moved, then rebuilt from
  // there down, parents before children as intern() needs.
  std::vector<uint32_t> chain;
  for (Item& item : items_) {
    uint32_t s = item.stack;
    auto found = moved.find(s);
    for (; found == moved.end(); found = moved.find(s)) {
      chain.push_back(s);
      s = old[s].parent;
    }
    uint32_t fresh = found->second;
    for (; !chain.empty(); chain.pop_back()) {
      fresh = intern(old[chain.back()].pos, fresh);
      moved.emplace(chain.back(), fresh);
    }
    item.stack = fresh;
  }
  sort_unique(items_, 0);
}

}  // namespace hostlm::grammar
