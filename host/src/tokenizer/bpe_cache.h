// A bounded, thread-safe map from a pre-tokenized piece to its BPE result: open addressing
// over one arena, so a lookup costs about one cache miss. When full it is emptied and
// refilled, which keeps memory bounded for any stream of text.
#pragma once
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

namespace hostlm::tok {

class BpeCache {
 public:
  explicit BpeCache(size_t max_entries);
  // Appends the cached ids of `piece` to out and returns true, or returns false.
  bool lookup(std::string_view piece, std::vector<int32_t>& out) const;
  void insert(std::string_view piece, const int32_t* ids, size_t count);

 private:
  struct Slot {
    uint64_t hash = 0;    // 0: empty
    uint32_t offset = 0;  // in arena_ (int32 units): the ids, then the piece's bytes
    uint16_t piece_size = 0;
    uint16_t id_count = 0;
  };
  static uint64_t hash(std::string_view s);
  const Slot* find(std::string_view piece, uint64_t h) const;
  void clear();

  size_t max_entries_;
  size_t entries_ = 0;
  size_t mask_;
  std::vector<Slot> slots_;
  std::vector<int32_t> arena_;
  mutable std::mutex mutex_;
};

}  // namespace hostlm::tok
