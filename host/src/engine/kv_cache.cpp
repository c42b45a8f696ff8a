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

bool is_state_type(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

DType parse_state_type(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "f32") return DType::F32;
  if (lower == "f16") return DType::F16;
  if (lower == "bf16") return DType::BF16;
  throw Error("unknown recurrent state type '" + std::string(name) + "' (choose f32, f16 or bf16)");
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

// ---- CachePlacement ------------------------------------------------------------------------

CachePlacement CachePlacement::uniform(Backend& backend, const CacheLayout& layout) {
  CachePlacement p;
  p.kv_layers.assign(static_cast<size_t>(layout.n_kv_layers), &backend);
  p.state_layers.assign(static_cast<size_t>(layout.n_state_layers), &backend);
  return p;
}

CachePlacement CachePlacement::of(Model& model) {
  const CacheLayout layout = model.cache_layout();
  CachePlacement p;
  for (int64_t l = 0; l < layout.n_kv_layers; ++l) p.kv_layers.push_back(model.kv_layer_backend(l));
  for (int64_t l = 0; l < layout.n_state_layers; ++l)
    p.state_layers.push_back(model.state_layer_backend(l));
  for (const auto* layers : {&p.kv_layers, &p.state_layers})
    for (Backend* b : *layers)
      if (b == nullptr) throw Error("the model names no backend for one of its cache layers");
  return p;
}

// ---- KvPagePool ----------------------------------------------------------------------------

KvPagePool::KvPagePool(Backend& backend, const CacheLayout& layout, DType type, int64_t n_pages)
    : KvPagePool(CachePlacement::uniform(backend, layout), layout, type, n_pages) {}

KvPagePool::KvPagePool(const CachePlacement& placement, const CacheLayout& layout, DType type,
                       int64_t n_pages)
    : layout_(layout),
      type_(type),
      page_bytes_(kv_page_bytes(type, layout)),
      layer_backends_(placement.kv_layers) {
  if (n_pages < 0 || n_pages > INT32_MAX) throw Error("invalid KV page count");
  if (static_cast<int64_t>(layer_backends_.size()) != layout.n_kv_layers)
    throw Error("KV placement names " + std::to_string(layer_backends_.size()) +
                " layers, the layout " + std::to_string(layout.n_kv_layers));
  // Page copies go through copy_rows, which moves whole floats.
  if (page_bytes_ % sizeof(float) != 0) throw Error("KV page size is not a whole number of floats");
  for (Backend* backend : layer_backends_) {
    keys_.push_back(alloc_bytes(*backend, page_bytes_ * static_cast<size_t>(n_pages)));
    values_.push_back(alloc_bytes(*backend, page_bytes_ * static_cast<size_t>(n_pages)));
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
      layer_backends_[static_cast<size_t>(l)]->copy_rows(
          base + page_floats * static_cast<size_t>(dst), n,
          base + page_floats * static_cast<size_t>(src), n, 1, static_cast<int64_t>(n));
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
    : RecurrentStateSlots(CachePlacement::uniform(backend, layout), layout, n_slots) {}

RecurrentStateSlots::RecurrentStateSlots(const CachePlacement& placement, const CacheLayout& layout,
                                         int64_t n_slots)
    : layout_(layout), n_slots_(n_slots) {
  if (n_slots < 0 || n_slots > INT32_MAX) throw Error("invalid state slot count");
  if (static_cast<int64_t>(placement.state_layers.size()) != layout.n_state_layers)
    throw Error("state placement names " + std::to_string(placement.state_layers.size()) +
                " layers, the layout " + std::to_string(layout.n_state_layers));
  const auto layer_floats = static_cast<size_t>(layout.conv_state + layout.recurrent_state);
  for (int64_t l = 0; l < layout.n_state_layers; ++l) {
    Backend* b = placement.state_layers[static_cast<size_t>(l)];
    if (parts_.empty() || parts_.back().backend != b) parts_.push_back(Part{b, l, 0, nullptr, 0});
    ++parts_.back().n_layers;
  }
  for (Part& part : parts_) {
    part.slot_floats = layer_floats * static_cast<size_t>(part.n_layers);
    part.data =
        part.backend->alloc(std::max<size_t>(1, part.slot_floats * static_cast<size_t>(n_slots)));
  }
  for (int64_t s = n_slots - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
}

int32_t RecurrentStateSlots::acquire() {
  if (free_.empty()) return -1;
  const int32_t slot = free_.back();
  free_.pop_back();
  for (const Part& part : parts_)
    if (part.slot_floats > 0) part.backend->fill(part_slot(part, slot), 0.f, part.slot_floats);
  return slot;
}

void RecurrentStateSlots::release(int32_t slot) {
  if (slot < 0 || slot >= n_slots_ || std::find(free_.begin(), free_.end(), slot) != free_.end())
    throw Error("state slot " + std::to_string(slot) + " released but not held");
  free_.push_back(slot);
}

float* RecurrentStateSlots::conv(int32_t slot, int64_t state_layer) {
  for (const Part& part : parts_)
    if (state_layer < part.first_layer + part.n_layers)
      return part_slot(part, slot) +
             static_cast<size_t>((state_layer - part.first_layer) *
                                 (layout_.conv_state + layout_.recurrent_state));
  throw Error("state layer " + std::to_string(state_layer) + " is out of range");
}

float* RecurrentStateSlots::recurrent(int32_t slot, int64_t state_layer) {
  return conv(slot, state_layer) + layout_.conv_state;
}

void copy_state(RecurrentStateSlots& dst, int32_t dst_slot, RecurrentStateSlots& src,
                int32_t src_slot) {
  if (src.slot_floats() != dst.slot_floats() || src.parts().size() != dst.parts().size())
    throw Error("state slots of different layouts");
  for (size_t i = 0; i < src.parts().size(); ++i) {
    const auto& from = src.parts()[i];
    const auto& to = dst.parts()[i];
    if (from.backend != to.backend || from.slot_floats != to.slot_floats)
      throw Error("state slots placed differently");
    if (from.slot_floats == 0) continue;
    const auto n = static_cast<int64_t>(from.slot_floats);
    from.backend->copy_rows(dst.part_slot(to, dst_slot), from.slot_floats,
                            src.part_slot(from, src_slot), from.slot_floats, 1, n);
  }
}

// ---- KvSequence ----------------------------------------------------------------------------

struct KvSequence::Owned {
  KvPagePool pool;
  RecurrentStateSlots states;
  Owned(const CachePlacement& placement, const CacheLayout& layout, DType type, int64_t pages)
      : pool(placement, layout, type, pages), states(placement, layout, 1) {}
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
  return standalone(CachePlacement::uniform(backend, layout), layout, capacity, kv_type);
}

std::unique_ptr<KvSequence> KvSequence::standalone(const CachePlacement& placement,
                                                   const CacheLayout& layout, int64_t capacity,
                                                   DType kv_type) {
  if (capacity <= 0) throw Error("a sequence needs a capacity of at least one token");
  auto owned = std::make_unique<Owned>(placement, layout, kv_type,
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

// ---- HeldPrefix ----------------------------------------------------------------------------

void HeldPrefix::keep(KvSequence& seq) {
  if (&seq.pool() != pool_) throw Error("a held prefix keeps pages of its own pool only");
  clear();
  for (int32_t page : seq.pages()) {
    pool_->retain(page);
    pages_.push_back(page);
  }
  RecurrentStateSlots& slots = seq.states();
  for (const auto& part : slots.parts()) {
    state_.emplace_back(part.slot_floats);
    if (part.slot_floats > 0)
      part.backend->download(state_.back().data(), slots.part_slot(part, seq.state_slot()),
                             part.slot_floats);
  }
  n_tokens_ = seq.n_past();
}

void HeldPrefix::restore(KvSequence& seq) const {
  if (n_tokens_ < 0) throw Error("no prefix is held");
  RecurrentStateSlots& slots = seq.states();
  if (&seq.pool() != pool_ || slots.parts().size() != state_.size())
    throw Error("a held prefix restores into a sequence of its own pool and state layout");
  for (size_t i = 0; i < state_.size(); ++i)
    if (slots.parts()[i].slot_floats != state_[i].size())
      throw Error("a held prefix restores into a sequence of its own pool and state layout");
  seq.adopt_prefix(pages_, n_tokens_);
  for (size_t i = 0; i < state_.size(); ++i) {
    const auto& part = slots.parts()[i];
    if (part.slot_floats > 0)
      part.backend->upload(slots.part_slot(part, seq.state_slot()), state_[i].data(),
                           part.slot_floats);
  }
}

void HeldPrefix::clear() {
  for (int32_t page : pages_) pool_->release(page);
  pages_.clear();
  state_.clear();
  n_tokens_ = -1;
}

}  // namespace hostlm
