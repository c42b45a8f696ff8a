#include "engine/prefix_cache.h"

#include <algorithm>
#include <iterator>

#include "hostlm/error.h"

namespace hostlm::engine {
namespace {

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

BlockKey chain_key(const BlockKey& parent, std::span<const int32_t> tokens) {
  // Two chains with different constants: a collision needs both 64-bit halves to collide.
  uint64_t a = mix(parent.a ^ 0x243f6a8885a308d3ull);
  uint64_t b = mix(parent.b + 0x13198a2e03707344ull);
  for (int32_t t : tokens) {
    const uint64_t u = static_cast<uint32_t>(t);
    a = mix(a ^ (u + 0x9e3779b97f4a7c15ull));
    b = mix(b + u * 0xff51afd7ed558ccdull + 0xa4093822299f31d0ull);
  }
  return {a ^ tokens.size(), b};
}

PrefixCache::PrefixCache(KvPagePool& pool, RecurrentStateSlots& snapshots)
    : pool_(pool), slots_(snapshots) {
  pool_.set_reclaimer(this);
}

PrefixCache::~PrefixCache() {
  clear();
  pool_.set_reclaimer(nullptr);
}

void PrefixCache::hold(int32_t page) {
  pool_.retain(page);
  ++holds_[page];
}

void PrefixCache::unhold(int32_t page) {
  auto it = holds_.find(page);
  if (it == holds_.end()) throw Error("prefix cache: page " + std::to_string(page) + " not held");
  if (--it->second == 0) holds_.erase(it);
  pool_.release(page);
}

bool PrefixCache::only_cache_holds(int32_t page) const {
  auto it = holds_.find(page);
  return it != holds_.end() && pool_.refcount(page) == it->second;
}

const PrefixCache::Block* PrefixCache::find_block(const BlockKey& key, const BlockKey& parent,
                                                  std::span<const int32_t> tokens) const {
  auto it = blocks_.find(key);
  if (it == blocks_.end() || !(it->second.parent == parent) ||
      !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin()))
    return nullptr;
  return &it->second;
}

PrefixCache::Hit PrefixCache::lookup(std::span<const int32_t> tokens, int64_t limit) {
  Hit hit;
  limit = std::min<int64_t>(limit, static_cast<int64_t>(tokens.size()));
  std::vector<const Block*> path;
  BlockKey parent{};
  while (static_cast<int64_t>(path.size() + 1) * kKvPageTokens <= limit) {
    const auto block = tokens.subspan(path.size() * kKvPageTokens, kKvPageTokens);
    const BlockKey key = chain_key(parent, block);
    const Block* b = find_block(key, parent, block);
    if (!b) break;
    path.push_back(b);
    hit.keys.push_back(key);
    parent = key;
  }
  // The deepest snapshot whose tail matches, preferring the longest tail at each depth.
  for (int64_t d = static_cast<int64_t>(path.size()); d >= 0; --d) {
    const BlockKey base = d == 0 ? BlockKey{} : hit.keys[static_cast<size_t>(d - 1)];
    auto candidates = snaps_by_base_.find(base);
    if (candidates == snaps_by_base_.end()) continue;
    int32_t best = -1;
    for (int32_t id : candidates->second) {
      const Snapshot& s = snaps_[static_cast<size_t>(id)];
      const int64_t end = d * kKvPageTokens + static_cast<int64_t>(s.tail.size());
      if (end == 0 || end > limit) continue;
      if (!std::equal(s.tail.begin(), s.tail.end(), tokens.begin() + d * kKvPageTokens)) continue;
      if (best < 0 || s.tail.size() > snaps_[static_cast<size_t>(best)].tail.size()) best = id;
    }
    if (best < 0) continue;
    const Snapshot& s = snaps_[static_cast<size_t>(best)];
    hit.tokens = d * kKvPageTokens + static_cast<int64_t>(s.tail.size());
    hit.keys.resize(static_cast<size_t>(d));
    for (int64_t i = 0; i < d; ++i) hit.pages.push_back(path[static_cast<size_t>(i)]->page);
    if (!s.tail.empty()) hit.pages.push_back(s.tail_page);
    hit.snapshot_slot = s.slot;
    // Most recent last; ancestors after their descendants, so a chain is evicted leaf first.
    snap_lru_.splice(snap_lru_.end(), snap_lru_, s.lru);
    for (int64_t i = d - 1; i >= 0; --i) {
      auto it = path[static_cast<size_t>(i)]->lru;
      block_lru_.splice(block_lru_.end(), block_lru_, it);
    }
    return hit;
  }
  hit.keys.clear();
  return hit;
}

BlockKey PrefixCache::add_block(const BlockKey& parent, std::span<const int32_t> tokens,
                                int32_t page) {
  if (static_cast<int64_t>(tokens.size()) != kKvPageTokens)
    throw Error("prefix cache: a block is " + std::to_string(kKvPageTokens) + " tokens");
  const BlockKey key = chain_key(parent, tokens);
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    // Cached already (or, vanishingly rarely, another prefix with the same 128-bit key,
    // which then stays uncached).
    block_lru_.splice(block_lru_.end(), block_lru_, it->second.lru);
    return key;
  }
  Block b;
  b.parent = parent;
  std::copy(tokens.begin(), tokens.end(), b.tokens.begin());
  b.page = page;
  hold(page);
  b.lru = block_lru_.insert(block_lru_.end(), key);
  blocks_.emplace(key, b);
  return key;
}

void PrefixCache::add_snapshot(const BlockKey& base, std::span<const int32_t> tail,
                               int32_t tail_page, RecurrentStateSlots& states, int32_t slot) {
  if (static_cast<int64_t>(tail.size()) >= kKvPageTokens)
    throw Error("prefix cache: a snapshot's tail is shorter than a page");
  if (slots_.total() == 0) return;
  if (auto same = snaps_by_base_.find(base); same != snaps_by_base_.end())
    for (int32_t id : same->second) {
      Snapshot& s = snaps_[static_cast<size_t>(id)];
      if (std::equal(s.tail.begin(), s.tail.end(), tail.begin(), tail.end())) {
        snap_lru_.splice(snap_lru_.end(), snap_lru_, s.lru);
        return;
      }
    }
  int32_t target = slots_.acquire();
  while (target < 0 && !snap_lru_.empty()) {
    drop_snapshot(snap_lru_.front());
    target = slots_.acquire();
  }
  if (target < 0) return;
  copy_state(slots_, target, states, slot);
  int32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int32_t>(snaps_.size());
    snaps_.emplace_back();
  }
  Snapshot& s = snaps_[static_cast<size_t>(id)];
  s.base = base;
  s.tail.assign(tail.begin(), tail.end());
  s.tail_page = tail.empty() ? -1 : tail_page;
  if (s.tail_page >= 0) hold(s.tail_page);
  s.slot = target;
  s.live = true;
  s.lru = snap_lru_.insert(snap_lru_.end(), id);
  snaps_by_base_[base].push_back(id);
  ++live_snapshots_;
}

void PrefixCache::drop_block(std::unordered_map<BlockKey, Block, BlockKeyHash>::iterator it) {
  const int32_t page = it->second.page;
  block_lru_.erase(it->second.lru);
  blocks_.erase(it);
  unhold(page);
}

void PrefixCache::drop_snapshot(int32_t id) {
  Snapshot& s = snaps_[static_cast<size_t>(id)];
  if (!s.live) return;
  slots_.release(s.slot);
  if (s.tail_page >= 0) unhold(s.tail_page);
  auto bucket = snaps_by_base_.find(s.base);
  std::erase(bucket->second, id);
  if (bucket->second.empty()) snaps_by_base_.erase(bucket);
  snap_lru_.erase(s.lru);
  s = Snapshot{};
  free_ids_.push_back(id);
  --live_snapshots_;
}

bool PrefixCache::reclaim_page() {
  for (const BlockKey& key : block_lru_) {
    auto it = blocks_.find(key);
    if (only_cache_holds(it->second.page)) {
      drop_block(it);
      return true;
    }
  }
  // Tail pages: several snapshots may share one, so drop until a page actually comes free.
  const int64_t free_before = pool_.free_pages();
  for (auto it = snap_lru_.begin(); it != snap_lru_.end();) {
    const int32_t id = *it++;
    const Snapshot& s = snaps_[static_cast<size_t>(id)];
    if (s.tail_page < 0 || !only_cache_holds(s.tail_page)) continue;
    drop_snapshot(id);
    if (pool_.free_pages() > free_before) return true;
  }
  return false;
}

int64_t PrefixCache::reclaimable_pages() const {
  int64_t n = 0;
  for (const auto& [page, count] : holds_)
    if (pool_.refcount(page) == count) ++n;
  return n;
}

void PrefixCache::clear() {
  while (!snap_lru_.empty()) drop_snapshot(snap_lru_.front());
  while (!blocks_.empty()) drop_block(blocks_.begin());
}

}  // namespace hostlm::engine
