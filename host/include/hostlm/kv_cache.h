// What a conversation keeps between forward passes, for hybrid models: KV pages for the
// full-attention layers, drawn on demand from a shared pool, and one fixed recurrent-state
// slot (conv + delta-rule state of every linear layer) per sequence.
//
// The host owns this memory (the engine shares one pool between all requests and its prefix
// cache); a model only reads the page tables and state slots of the sequences it evaluates.
// Pages are reference-counted: a page with more than one owner is never written, a sequence
// that must append to a shared page copies it first (copy-on-write).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "hostlm/dtype.h"
#include "hostlm/ops.h"
#include "hostlm/plugin_api.h"

namespace hostlm {

// KV element types: F32 (exact), F16 (the serving default), Q8_0 (half of F16).
bool is_kv_type(DType type);
// "f32", "f16" or "q8_0" (any case); throws hostlm::Error naming the choices otherwise.
DType parse_kv_type(std::string_view name);
// Element types a recurrent (delta-rule) state may be stored in: F32, F16, BF16
// (Backend::DeltaRuleShape::state).
bool is_state_type(DType type);
// "f32", "f16" or "bf16" (--state-type); throws hostlm::Error naming the others.
DType parse_state_type(std::string_view name);
// Bytes of one token's keys (or values) of one layer: `width` values stored as `type`.
size_t kv_row_bytes(DType type, int64_t width);

// Bytes one page of one layer takes, keys or values.
size_t kv_page_bytes(DType type, const CacheLayout& layout);

// Which backend holds each cache layer's storage: the model's backend for every layer, unless
// the model is split between the CPU and a GPU (--gpu-layers), where each layer's cache lives
// with the layer (Model::kv_layer_backend / state_layer_backend).
struct CachePlacement {
  std::vector<Backend*> kv_layers, state_layers;
  static CachePlacement uniform(Backend& backend, const CacheLayout& layout);
  static CachePlacement of(Model& model);
};

// Frees pages that only a cache holds, when the pool runs dry (the prefix cache).
class PageReclaimer {
 public:
  virtual ~PageReclaimer() = default;
  // Releases at least one page back to the pool; false when nothing can be released.
  virtual bool reclaim_page() = 0;
  // Pages that reclaim_page could release now.
  virtual int64_t reclaimable_pages() const = 0;
};

// A fixed number of pages shared by every attention layer: page p means the same 32
// positions in each layer's key and value storage.
class KvPagePool {
 public:
  // Allocates all storage at once (backend memory; on the CPU untouched pages cost nothing).
  KvPagePool(Backend& backend, const CacheLayout& layout, DType type, int64_t n_pages);
  // Each attention layer's storage on its own backend.
  KvPagePool(const CachePlacement& placement, const CacheLayout& layout, DType type,
             int64_t n_pages);
  KvPagePool(const KvPagePool&) = delete;
  KvPagePool& operator=(const KvPagePool&) = delete;

  int64_t total() const { return static_cast<int64_t>(refs_.size()); }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t used() const { return total() - free_pages(); }
  // Pages promised to running sequences and not yet allocated.
  int64_t reserved() const { return reserved_; }
  // Pages a new reservation may take: free ones plus what the reclaimer can release, minus
  // what is already promised.
  int64_t available() const;

  // Promises `n` pages (false, nothing promised, when fewer are available).
  bool reserve(int64_t n);
  void unreserve(int64_t n);
  // A page with one owner, or -1 when none can be had. `reserved`: takes one of the promised
  // pages; otherwise only pages beyond the promised ones are handed out.
  int32_t allocate(bool reserved);
  void retain(int32_t page);
  void release(int32_t page);
  int32_t refcount(int32_t page) const { return refs_[static_cast<size_t>(page)]; }
  // Copies the first `n_tokens` rows of page `src` into page `dst`, in every layer.
  void copy(int32_t dst, int32_t src, int64_t n_tokens);

  void set_reclaimer(PageReclaimer* reclaimer) { reclaimer_ = reclaimer; }
  KvPages layer(int64_t kv_layer) const;
  const CacheLayout& layout() const { return layout_; }
  DType type() const { return type_; }
  size_t page_bytes() const { return page_bytes_; }
  size_t bytes() const;  // all storage

 private:
  CacheLayout layout_;
  DType type_;
  size_t page_bytes_;
  std::vector<Backend*> layer_backends_;
  std::vector<std::unique_ptr<Buffer>> keys_, values_;  // per attention layer
  std::vector<int32_t> refs_;
  std::vector<int32_t> free_;  // a stack: recently freed pages are reused first
  int64_t reserved_ = 0;
  PageReclaimer* reclaimer_ = nullptr;
};

// Fixed slots of recurrent state: per slot, each linear layer's conv state then its
// delta-rule state, float32.
class RecurrentStateSlots {
 public:
  RecurrentStateSlots(Backend& backend, const CacheLayout& layout, int64_t n_slots);
  // Each linear layer's state on its own backend.
  RecurrentStateSlots(const CachePlacement& placement, const CacheLayout& layout, int64_t n_slots);
  int64_t total() const { return n_slots_; }
  int64_t free_slots() const { return static_cast<int64_t>(free_.size()); }
  // A zeroed slot, or -1 when all are taken.
  int32_t acquire();
  void release(int32_t slot);
  float* conv(int32_t slot, int64_t state_layer);
  float* recurrent(int32_t slot, int64_t state_layer);
  size_t slot_floats() const { return static_cast<size_t>(layout_.state_floats()); }
  size_t bytes() const { return slot_floats() * static_cast<size_t>(n_slots_) * sizeof(float); }

  // Runs of consecutive linear layers on one backend; a slot's state in a part is one array.
  struct Part {
    Backend* backend;
    int64_t first_layer, n_layers;
    std::unique_ptr<Buffer> data;  // n_slots arrays of n_layers * (conv + recurrent) floats
    size_t slot_floats;
  };
  std::span<const Part> parts() const { return parts_; }
  float* part_slot(const Part& part, int32_t slot) const {
    return part.data->data() + part.slot_floats * static_cast<size_t>(slot);
  }

 private:
  CacheLayout layout_;
  int64_t n_slots_;
  std::vector<Part> parts_;
  std::vector<int32_t> free_;
};

// Copies one slot's whole state into another (of the same layout), on the backend.
void copy_state(RecurrentStateSlots& dst, int32_t dst_slot, RecurrentStateSlots& src,
                int32_t src_slot);

// A conversation's cache: its page table, its state slot and how many tokens it holds.
class KvSequence final : public Sequence {
 public:
  // Pages come from `pool` as the sequence grows; the state lives in a slot of `states`
  // (throws hostlm::Error when no slot is free).
  KvSequence(KvPagePool& pool, RecurrentStateSlots& states, int64_t capacity);
  // A sequence with its own exactly-sized pool and slot, for single-conversation use.
  static std::unique_ptr<KvSequence> standalone(Backend& backend, const CacheLayout& layout,
                                                int64_t capacity, DType kv_type = DType::F32);
  static std::unique_ptr<KvSequence> standalone(const CachePlacement& placement,
                                                const CacheLayout& layout, int64_t capacity,
                                                DType kv_type = DType::F32);
  ~KvSequence() override;
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  int64_t n_past() const override { return n_past_; }
  int64_t capacity() const override { return capacity_; }

  // Makes positions n_past .. n_past + T - 1 writable: allocates missing pages and copies a
  // shared page before it is written. Throws hostlm::Error when the pool has no page left.
  void prepare_append(int64_t T);
  // The T prepared tokens have been written.
  void advance(int64_t T);
  // Starts from a cached prefix (only on an empty sequence): `pages` hold the KV of the first
  // n_tokens positions and are retained here. The caller restores the recurrent state.
  void adopt_prefix(std::span<const int32_t> pages, int64_t n_tokens);

  // Promises `n` more pages of the pool to this sequence (false when the pool cannot), so
  // that it never runs dry while growing; what is left is returned when it ends.
  bool reserve(int64_t n);

  std::span<const int32_t> pages() const { return pages_; }
  int32_t state_slot() const { return slot_; }
  int64_t reserved_pages() const { return reserved_; }
  KvPagePool& pool() { return *pool_; }
  RecurrentStateSlots& states() { return *states_; }

 private:
  struct Owned;  // the pool and slots of a standalone sequence
  std::unique_ptr<Owned> owned_;
  KvPagePool* pool_;
  RecurrentStateSlots* states_;
  int64_t capacity_;
  int64_t n_past_ = 0;
  int64_t reserved_ = 0;
  int32_t slot_ = -1;
  std::vector<int32_t> pages_;
};

// A sequence's cache kept for later sequences to start from, holding no state slot: its KV
// pages stay retained in the pool and its recurrent state is copied into host memory (as
// llama-bench keeps a saved sequence state; `hostlm bench` starts each depth run from one).
class HeldPrefix {
 public:
  explicit HeldPrefix(KvPagePool& pool) : pool_(&pool) {}
  HeldPrefix(const HeldPrefix&) = delete;
  HeldPrefix& operator=(const HeldPrefix&) = delete;
  ~HeldPrefix() { clear(); }

  // Keeps `seq`'s pages and a copy of its state, replacing what was held.
  void keep(KvSequence& seq);
  // Starts the empty sequence `seq` (of the same pool and state layout) from the held prefix.
  void restore(KvSequence& seq) const;
  // Releases the pages and the copy.
  void clear();
  // Tokens held, or -1 when nothing is.
  int64_t n_tokens() const { return n_tokens_; }

 private:
  KvPagePool* pool_;
  std::vector<int32_t> pages_;
  std::vector<std::vector<float>> state_;  // per part of the state slots
  int64_t n_tokens_ = -1;
};

}  // namespace hostlm
