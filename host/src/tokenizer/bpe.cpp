#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>

namespace hostlm::tok {
namespace {

// Pieces up to this many bytes are cached; longer ones (long CJK or white-space runs) rarely
// repeat and would crowd out the words that do.
constexpr size_t kMaxCachedPiece = 128;
constexpr size_t kCacheCapacity = size_t{1} << 16;
// Below this many symbols rescanning every pair beats keeping a heap.
constexpr size_t kSmallPiece = 24;

}  // namespace

Bpe::Bpe(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges)
    : byte_ids_(byte_ids), merges_(merges.size()), cache_(kCacheCapacity) {
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    merges_.insert(m.left, m.right, static_cast<uint32_t>(rank), m.result);
  }
}

void Bpe::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.size() == 1) {
    if (const int32_t id = byte_ids_[static_cast<uint8_t>(piece[0])]; id >= 0) out.push_back(id);
    return;
  }
  const bool cacheable = piece.size() <= kMaxCachedPiece;
  if (cacheable && cache_.lookup(piece, out)) return;
  const size_t before = out.size();
  if (piece.size() <= kSmallPiece) {
    merge_small(piece, out);
  } else {
    merge_large(piece, out);
  }
  if (cacheable) cache_.insert(piece, out.data() + before, out.size() - before);
}

void Bpe::merge_small(std::string_view piece, std::vector<int32_t>& out) const {
  int32_t ids[kSmallPiece];
  size_t n = 0;
  for (char c : piece) {
    if (const int32_t id = byte_ids_[static_cast<uint8_t>(c)]; id >= 0) ids[n++] = id;
  }
  while (n > 1) {
    const MergeTable::Entry* best = nullptr;
    size_t best_pos = 0;
    for (size_t i = 0; i + 1 < n; ++i) {
      const MergeTable::Entry* e = merges_.find(ids[i], ids[i + 1]);
      if (e != nullptr && (best == nullptr || e->rank < best->rank)) {
        best = e;
        best_pos = i;
      }
    }
    if (best == nullptr) break;
    ids[best_pos] = best->result;
    std::copy(ids + best_pos + 2, ids + n, ids + best_pos + 1);
    --n;
  }
  out.insert(out.end(), ids, ids + n);
}

void Bpe::merge_large(std::string_view piece, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id, prev, next;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;  // left symbol; symbols keep their initial order, so lower is further left
    int32_t result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.clear();
  for (char c : piece) {
    if (const int32_t id = byte_ids_[static_cast<uint8_t>(c)]; id >= 0) {
      const auto i = static_cast<int32_t>(symbols.size());
      symbols.push_back({id, i - 1, i + 1});
    }
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  heap.clear();
  auto consider = [&](int32_t left) {
    if (left < 0 || symbols[left].next < 0) return;
    if (const auto* e = merges_.find(symbols[left].id, symbols[symbols[left].next].id)) {
      heap.push_back({e->rank, left, e->result});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.pos];
    // Stale entries: the left symbol was absorbed, or either side has grown since. A
    // symbol's text only ever grows, so an unchanged merge result means an unchanged pair.
    if (left.id < 0 || left.next < 0) continue;
    const auto* e = merges_.find(left.id, symbols[left.next].id);
    if (e == nullptr || e->result != c.result || e->rank != c.rank) continue;
    Symbol& right = symbols[left.next];
    left.id = c.result;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.pos;
    consider(left.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace hostlm::tok
