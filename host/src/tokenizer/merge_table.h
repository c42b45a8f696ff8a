// Merge ranks keyed by the pair of token ids (open addressing): the lookup in BPE's inner
// loop, so it avoids the node chasing of std::unordered_map.
#pragma once
#include <cstdint>
#include <vector>

namespace hostlm::tok {

class MergeTable {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t result = -1;
  };

  explicit MergeTable(size_t expected = 0) {
    size_t cap = 16;
    while (cap < expected * 2) cap <<= 1;
    slots_.assign(cap, Entry{});
    mask_ = cap - 1;
  }

  // A later insert of the same pair replaces the earlier one (HF keeps the last duplicate).
  void insert(int32_t left, int32_t right, uint32_t rank, int32_t result) {
    Entry& e = slot(key(left, right));
    e = {key(left, right), rank, result};
  }

  const Entry* find(int32_t left, int32_t right) const {
    const uint64_t k = key(left, right);
    for (size_t i = hash(k);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == k) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t hash(uint64_t k) const {
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  Entry& slot(uint64_t k) {
    for (size_t i = hash(k);; i = (i + 1) & mask_) {
      if (slots_[i].key == k || slots_[i].key == kEmpty) return slots_[i];
    }
  }
  std::vector<Entry> slots_;
  size_t mask_ = 0;
};

}  // namespace hostlm::tok
