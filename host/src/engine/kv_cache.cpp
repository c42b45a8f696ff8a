#include "hostlm/kv_cache.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "hostlm/error.h"

namespace hostlm {
namespace {

constexpr int64_t kQ8Block = 32;
constexpr size_t kQ8BlockBytes = 34;  // f16 scale + 32 int8

std::unique_ptr<Buffer> alloc_bytes(Backend& backend, size_t bytes) {
  return backend.alloc((bytes + sizeof(float) - 1) / sizeof(float));
}

}  // namespace

bool is_kv_type(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::Q8_0;
}

DType parse_kv_type(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "f32") return DType::F32;
  if (lower == "f16") return DType::F16;
  if (lower == "q8_0") return DType::Q8_0;
  throw Error("unknown KV cache type '" + std::string(name) + "' (choose f32, f16 or q8_0)");
}

size_t kv_row_bytes(DType type, int64_t width) {
  switch (type) {
    case DType::F32:
      return static_cast<size_t>(width) * 4;
    case DType::F16:
      return static_cast<size_t>(width) * 2;
    case DType::Q8_0:
      if (width % kQ8Block != 0)
        throw Error("a Q8_0 KV cache needs rows of a multiple of 32 values, not " +
                    std::to_string(width) + " (use f16)");
      return static_cast<size_t>(width / kQ8Block) * kQ8BlockBytes;
    default:
      throw Error("the KV cache cannot be stored as " + std::string(dtype_name(type)) +
                  " (choose f32, f16 or q8_0)");
  }
}

size_t kv_page_bytes(DType type, const CacheLayout& layout) {
  return kv_row_bytes(type, layout.kv_width()) * static_cast<size_t>(kKvPageTokens);
}

// ---- KvPagePool ----------------------------------------------------------------------------

KvPagePool::KvPagePool(Backend& backend, const CacheLayout& layout, DType type, int64_t n_pages)
    : backend_(backend), layout_(layout), type_(type), page_bytes_(kv_page_bytes(type, layout)) {
  if (n_pages < 0 || n_pages > INT32_MAX) throw Error("invalid KV page count");
  // Page copies go through copy_rows, which moves whole floats.
  if (page_bytes_ % sizeof(float) != 0) throw Error("KV page size is not a whole number of floats");
  for (int64_t l = 0; l < layout.n_kv_layers; ++l) {
    keys_.push_back(alloc_bytes(backend, page_bytes_ * static_cast<size_t>(n_pages)));
    values_.push_back(alloc_bytes(backend, page_bytes_ * static_cast<size_t>(n_pages)));
  }
  refs_.assign(static_cast<size_t>(n_pages), 0);
  free_.reserve(static_cast<size_t>(n_pages));
  for (int64_t p = n_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

int64_t KvPagePool::available() const {
  return free_pages() + (reclaimer_ ? reclaimer_->reclaimable_pages() : 0) - reserved_;
}

bool KvPagePool::reserve(int64_t n) {
  if (n <= 0) return true;
  if (available() < n) return false;
  reserved_ += n;
  return true;
}

void KvPagePool::unreserve(int64_t n) { reserved_ -= std::min(n, reserved_); }

int32_t KvPagePool::allocate(bool reserved) {
  if (!reserved && available() <= 0) return -1;
  while (free_.empty() && reclaimer_ && reclaimer_->reclaim_page()) {
  }
  if (free_.empty()) return -1;
  const int32_t page = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(page)] = 1;
  if (reserved && reserved_ > 0) --reserved_;
  return page;
}

void KvPagePool::retain(int32_t page) {
  if (page < 0 || page >= total() || refs_[static_cast<size_t>(page)] <= 0)
    throw Error("KV page " + std::to_string(page) + " is not allocated");
  ++refs_[static_cast<size_t>(page)];
}

void KvPagePool::release(int32_t page) {
  if (page < 0 || page >= total() || refs_[static_cast<size_t>(page)] <= 0)
    throw Error("KV page " + std::to_string(page) + " released more often than held");
  if (--refs_[static_cast<size_t>(page)] == 0) free_.push_back(page);
}

void KvPagePool::copy(int32_t dst, int32_t src, int64_t n_tokens) {
  const size_t row_floats = kv_row_bytes(type_, layout_.kv_width()) / sizeof(float);
  const size_t page_floats = page_bytes_ / sizeof(float);
  // A Q8_0 row may not be a whole number of floats; copy whole pages then.
  const bool whole = kv_row_bytes(type_, layout_.kv_width()) % sizeof(float) != 0;
  const size_t n = whole ? page_floats : row_floats * static_cast<size_t>(n_tokens);
  for (int64_t l = 0; l < layout_.n_kv_layers; ++l)
    for (auto* storage : {&keys_, &values_}) {
      float* base = (*storage)[static_cast<size_t>(l)]->data();
      backend_.copy_rows(base + page_floats * static_cast<size_t>(dst), n,
                         base + page_floats * static_cast<size_t>(src), n, 1,
                         static_cast<int64_t>(n));
    }
}

KvPages KvPagePool::layer(int64_t kv_layer) const {
  KvPages p;
  p.type = type_;
  p.n_head_kv = layout_.n_head_kv;
  p.head_dim = layout_.head_dim;
  p.k = keys_[static_cast<size_t>(kv_layer)]->data();
  p.v = values_[static_cast<size_t>(kv_layer)]->data();
  p.page_bytes = page_bytes_;
  return p;
}

size_t KvPagePool::bytes() const {
  return page_bytes_ * refs_.size() * 2 * static_cast<size_t>(layout_.n_kv_layers);
}

// ---- RecurrentStateSlots -------------------------------------------------------------------

RecurrentStateSlots::RecurrentStateSlots(Backend& backend, const CacheLayout& layout,
                                         int64_t n_slots)
    : backend_(backend), layout_(layout), n_slots_(n_slots) {
  if (n_slots < 0 || n_slots > INT32_MAX) throw Error("invalid state slot count");
  data_ = backend.alloc(std::max<size_t>(1, slot_floats() * static_cast<size_t>(n_slots)));
  for (int64_t s = n_slots - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
}

int32_t RecurrentStateSlots::acquire() {
  if (free_.empty()) return -1;
  const int32_t slot = free_.back();
  free_.pop_back();
  if (slot_floats() > 0) backend_.fill(slot_data(slot), 0.f, slot_floats());
  return slot;
}

void RecurrentStateSlots::release(int32_t slot) {
  if (slot < 0 || slot >= n_slots_ || std::find(free_.begin(), free_.end(), slot) != free_.end())
    throw Error("state slot " + std::to_string(slot) + " released but not held");
  free_.push_back(slot);
}

float* RecurrentStateSlots::slot_data(int32_t slot) {
  return data_->data() + slot_floats() * static_cast<size_t>(slot);
}

float* RecurrentStateSlots::conv(int32_t slot, int64_t state_layer) {
  return slot_data(slot) +
         static_cast<size_t>(state_layer * (layout_.conv_state + layout_.recurrent_state));
}

float* RecurrentStateSlots::recurrent(int32_t slot, int64_t state_layer) {
  return conv(slot, state_layer) + layout_.conv_state;
}

void copy_state(RecurrentStateSlots& dst, int32_t dst_slot, RecurrentStateSlots& src,
                int32_t src_slot) {
  const size_t n = src.slot_floats();
  if (n != dst.slot_floats()) throw Error("state slots of different layouts");
  if (n == 0) return;
  src.backend().copy_rows(dst.slot_data(dst_slot), n, src.slot_data(src_slot), n, 1,
                          static_cast<int64_t>(n));
}

// ---- KvSequence ----------------------------------------------------------------------------

struct KvSequence::Owned {
  KvPagePool pool;
  RecurrentStateSlots states;
  Owned(Backend& backend, const CacheLayout& layout, DType type, int64_t pages)
      : pool(backend, layout, type, pages), states(backend, layout, 1) {}
};

KvSequence::KvSequence(KvPagePool& pool, RecurrentStateSlots& states, int64_t capacity)
    : pool_(&pool), states_(&states), capacity_(capacity) {
  if (capacity <= 0) throw Error("a sequence needs a capacity of at least one token");
  slot_ = states.acquire();
  if (slot_ < 0) throw Error("no recurrent-state slot is free for a new sequence");
  pages_.reserve(static_cast<size_t>((capacity + kKvPageTokens - 1) / kKvPageTokens));
}

std::unique_ptr<KvSequence> KvSequence::standalone(Backend& backend, const CacheLayout& layout,
                                                   int64_t capacity, DType kv_type) {
  if (capacity <= 0) throw Error("a sequence needs a capacity of at least one token");
  auto owned = std::make_unique<Owned>(backend, layout, kv_type,
                                       (capacity + kKvPageTokens - 1) / kKvPageTokens);
  auto seq = std::make_unique<KvSequence>(owned->pool, owned->states, capacity);
  seq->owned_ = std::move(owned);
  return seq;
}

KvSequence::~KvSequence() {
  for (int32_t page : pages_) pool_->release(page);
  pool_->unreserve(reserved_);
  if (slot_ >= 0) states_->release(slot_);
}

bool KvSequence::reserve(int64_t n) {
  if (!pool_->reserve(n)) return false;
  reserved_ += std::max<int64_t>(n, 0);
  return true;
}

void KvSequence::prepare_append(int64_t T) {
  if (n_past_ + T > capacity_)
    throw Error("sequence is full: " + std::to_string(n_past_) + " + " + std::to_string(T) +
                " tokens exceed its capacity of " + std::to_string(capacity_));
  const int64_t end = n_past_ + T;
  auto take = [&]() {
    const bool promised = reserved_ > 0;
    const int32_t page = pool_->allocate(promised);
    if (page < 0)
      throw Error("the KV cache is full: no page left for " + std::to_string(end) + " tokens (" +
                  std::to_string(pool_->total()) + " pages of " + std::to_string(kKvPageTokens) +
                  " tokens in all)");
    if (promised) --reserved_;
    return page;
  };
  // The page that position n_past falls in may be shared (a cached prefix): copy it first.
  const int64_t first_page = n_past_ / kKvPageTokens;
  if (T > 0 && n_past_ % kKvPageTokens != 0) {
    int32_t& page = pages_[static_cast<size_t>(first_page)];
    if (pool_->refcount(page) > 1) {
      const int32_t fresh = take();
      pool_->copy(fresh, page, n_past_ % kKvPageTokens);
      pool_->release(page);
      page = fresh;
    }
  }
  while (static_cast<int64_t>(pages_.size()) * kKvPageTokens < end) pages_.push_back(take());
}

void KvSequence::advance(int64_t T) {
  if (static_cast<int64_t>(pages_.size()) * kKvPageTokens < n_past_ + T)
    throw Error("sequence advanced past its prepared pages");
  n_past_ += T;
}

void KvSequence::adopt_prefix(std::span<const int32_t> pages, int64_t n_tokens) {
  if (n_past_ != 0 || !pages_.empty()) throw Error("a prefix can only start an empty sequence");
  if (n_tokens > capacity_ ||
      static_cast<int64_t>(pages.size()) != (n_tokens + kKvPageTokens - 1) / kKvPageTokens)
    throw Error("cached prefix does not match its pages");
  for (int32_t page : pages) {
    pool_->retain(page);
    pages_.push_back(page);
  }
  n_past_ = n_tokens;
}

}  // namespace hostlm
