// The BPE merge loop over one pre-tokenized piece: start from one token per byte, merge the
// adjacent pair of lowest rank (leftmost on ties) until no pair has a merge. Results are
// kept in a bounded cache keyed by the piece, since natural text repeats its words.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_cache.h"
#include "tokenizer/merge_table.h"

namespace hostlm::tok {

class Bpe {
 public:
  struct Merge {
    int32_t left, right, result;
  };
  // byte_ids[b]: the token of the single byte b, or -1 when the vocabulary lacks it (such
  // bytes are dropped, as HF does without an unknown token). merges in rank order.
  Bpe(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges);

  // Appends the tokens of `piece` (raw bytes) to `out`. Thread-safe.
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

 private:
  void merge_small(std::string_view piece, std::vector<int32_t>& out) const;
  void merge_large(std::string_view piece, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_ids_;
  MergeTable merges_;
  mutable BpeCache cache_;
};

}  // namespace hostlm::tok
