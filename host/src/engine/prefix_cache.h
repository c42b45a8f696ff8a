// The engine's prefix cache for hybrid models (internal to the engine).
//
// Full KV pages are kept under a hash chain of their tokens: the key of block i (tokens
// [32i, 32i + 32)) hashes block i-1's key with the block's tokens, so a key names a whole
// prefix and equal prefixes meet whatever request computed them. Recurrent state cannot be
// rewound, so a prefix is only resumable where a snapshot of the state was taken; a snapshot
// is filed under the key of the full blocks before it plus the tokens after them (its
// "tail", fewer than 32), and holds the tail's page, which a resuming sequence copies before
// writing into it.
//
// Pages are the pool's, reference-counted: the cache holds one reference per block or
// snapshot. When the pool runs dry it asks the cache (PageReclaimer) to drop the least
// recently used entries whose pages nobody else holds. Snapshots live in fixed slots and
// the least recently used is dropped when a new one needs a slot.
#pragma once
#include <array>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "hostlm/kv_cache.h"

namespace hostlm::engine {

// 128 bits of a token prefix (two independent 64-bit chains).
struct BlockKey {
  uint64_t a = 0, b = 0;
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.a ^ (k.b << 1)); }
};

// The key of a block of tokens that follows the prefix named `parent` ({} for the start).
BlockKey chain_key(const BlockKey& parent, std::span<const int32_t> tokens);

class PrefixCache final : public PageReclaimer {
 public:
  // Registers itself as the pool's reclaimer.
  PrefixCache(KvPagePool& pool, RecurrentStateSlots& snapshots);
  ~PrefixCache() override;
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  struct Hit {
    int64_t tokens = 0;          // prefix length that can be resumed (0: nothing)
    std::vector<int32_t> pages;  // the prefix's pages, ceil(tokens / 32) of them
    int32_t snapshot_slot = -1;  // the state after `tokens` tokens
    std::vector<BlockKey> keys;  // keys of the prefix's full blocks
  };
  // The longest resumable prefix of `tokens` of at most `limit` tokens. Marks what it uses as
  // recently used; the caller retains the pages before anything else runs on the cache.
  Hit lookup(std::span<const int32_t> tokens, int64_t limit);

  // A full page of a sequence: block `tokens` (32) after the prefix `parent`. Keeps a
  // reference unless the block is cached already. Returns the block's key.
  BlockKey add_block(const BlockKey& parent, std::span<const int32_t> tokens, int32_t page);
  // A snapshot of `states` slot `slot`, the state after `base_tokens` + tail.size() tokens:
  // `base` names the full blocks before it, `tail` (< 32 tokens) is in `tail_page`.
  void add_snapshot(const BlockKey& base, std::span<const int32_t> tail, int32_t tail_page,
                    RecurrentStateSlots& states, int32_t slot);

  bool reclaim_page() override;
  int64_t reclaimable_pages() const override;

  int64_t blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t snapshots() const { return live_snapshots_; }
  // Pages the cache holds a reference to (each once).
  int64_t held_pages() const { return static_cast<int64_t>(holds_.size()); }
  // Drops everything (pages and slots go back).
  void clear();

 private:
  struct Block {
    BlockKey parent;
    std::array<int32_t, kKvPageTokens> tokens;
    int32_t page;
    std::list<BlockKey>::iterator lru;
  };
  struct Snapshot {
    BlockKey base;
    std::vector<int32_t> tail;
    int32_t tail_page = -1;
    int32_t slot = -1;
    std::list<int32_t>::iterator lru;
    bool live = false;
  };

  void hold(int32_t page);
  void unhold(int32_t page);
  bool only_cache_holds(int32_t page) const;
  void drop_block(std::unordered_map<BlockKey, Block, BlockKeyHash>::iterator it);
  void drop_snapshot(int32_t id);
  const Block* find_block(const BlockKey& key, const BlockKey& parent,
                          std::span<const int32_t> tokens) const;

  KvPagePool& pool_;
  RecurrentStateSlots& slots_;
  std::unordered_map<BlockKey, Block, BlockKeyHash> blocks_;
  std::list<BlockKey> block_lru_;  // least recently used first
  std::vector<Snapshot> snaps_;    // by id; dead entries are reused
  std::vector<int32_t> free_ids_;
  std::unordered_map<BlockKey, std::vector<int32_t>, BlockKeyHash> snaps_by_base_;
  std::list<int32_t> snap_lru_;
  int64_t live_snapshots_ = 0;
  std::unordered_map<int32_t, int32_t> holds_;  // page -> references the cache holds
};

}  // namespace hostlm::engine
