#include "tokenizer/bpe_cache.h"

#include <cstring>

namespace hostlm::tok {
namespace {

// Bounds the arena at 16 MiB even if every cached piece is long.
constexpr size_t kArenaLimit = size_t{4} << 20;  // int32 units

}  // namespace

BpeCache::BpeCache(size_t max_entries) : max_entries_(max_entries) {
  size_t slots = 16;
  while (slots < max_entries * 2) slots <<= 1;  // load factor at most 1/2
  slots_.resize(slots);
  mask_ = slots - 1;
}

uint64_t BpeCache::hash(std::string_view s) {
  // 64-bit multiply-mix over 8-byte words: pieces are short, so speed beats strength here.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xFF51AFD7ED558CCDull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 32;
  return h | 1;  // never the empty marker
}

const BpeCache::Slot* BpeCache::find(std::string_view piece, uint64_t h) const {
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.hash == 0) return &s;
    if (s.hash == h && s.piece_size == piece.size() &&
        std::memcmp(arena_.data() + s.offset + s.id_count, piece.data(), piece.size()) == 0) {
      return &s;
    }
  }
}

bool BpeCache::lookup(std::string_view piece, std::vector<int32_t>& out) const {
  const uint64_t h = hash(piece);
  std::lock_guard lock(mutex_);
  const Slot* s = find(piece, h);
  if (s->hash == 0) return false;
  const int32_t* ids = arena_.data() + s->offset;
  out.insert(out.end(), ids, ids + s->id_count);
  return true;
}

void BpeCache::insert(std::string_view piece, const int32_t* ids, size_t count) {
  if (piece.size() > UINT16_MAX || count > UINT16_MAX) return;
  const uint64_t h = hash(piece);
  const size_t words = count + (piece.size() + 3) / 4;
  std::lock_guard lock(mutex_);
  if (entries_ >= max_entries_ || arena_.size() + words > kArenaLimit) clear();
  auto* slot = const_cast<Slot*>(find(piece, h));
  if (slot->hash != 0) return;  // another thread got there first
  const size_t offset = arena_.size();
  arena_.resize(offset + words);
  std::memcpy(arena_.data() + offset, ids, count * sizeof(int32_t));
  std::memcpy(arena_.data() + offset + count, piece.data(), piece.size());
  *slot = {h, static_cast<uint32_t>(offset), static_cast<uint16_t>(piece.size()),
           static_cast<uint16_t>(count)};
  ++entries_;
}

void BpeCache::clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  arena_.clear();
  entries_ = 0;
}

}  // namespace hostlm::tok
