// A held prefix (hostlm bench's depth prefix): a sequence started from it has the kept
// sequence's pages, length and recurrent state, though the kept one is gone and the pool has
// a single state slot; clearing gives every page back; a mismatched sequence is refused.
#include <gtest/gtest.h>

#include <numeric>

#include "hostlm/error.h"
#include "hostlm/kv_cache.h"

namespace hostlm {
namespace {

CacheLayout small_layout() {
  CacheLayout layout;
  layout.n_kv_layers = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 8;
  layout.n_state_layers = 2;
  layout.conv_state = 6;
  layout.recurrent_state = 10;
  return layout;
}

// The slot's whole state (CPU backend: host memory) with distinct values.
void fill_state(RecurrentStateSlots& slots, int32_t slot, float first) {
  for (const auto& part : slots.parts()) {
    float* p = slots.part_slot(part, slot);
    std::iota(p, p + part.slot_floats, first);
  }
}

std::vector<float> state_of(RecurrentStateSlots& slots, int32_t slot) {
  std::vector<float> out;
  for (const auto& part : slots.parts()) {
    const float* p = slots.part_slot(part, slot);
    out.insert(out.end(), p, p + part.slot_floats);
  }
  return out;
}

TEST(HeldPrefix, ARestoredSequenceHasTheKeptPagesLengthAndState) {
  auto cpu = create_backend("cpu");
  const CacheLayout layout = small_layout();
  KvPagePool pool(*cpu, layout, DType::F32, 8);
  RecurrentStateSlots slots(*cpu, layout, 1);  // no second slot for the prefix
  HeldPrefix prefix(pool);
  EXPECT_EQ(prefix.n_tokens(), -1);

  std::vector<int32_t> kept_pages;
  std::vector<float> kept_state;
  {
    KvSequence first(pool, slots, 100);
    first.prepare_append(45);  // two pages, the second one partial
    first.advance(45);
    fill_state(slots, first.state_slot(), 3.f);
    kept_pages.assign(first.pages().begin(), first.pages().end());
    kept_state = state_of(slots, first.state_slot());
    prefix.keep(first);
  }
  EXPECT_EQ(prefix.n_tokens(), 45);
  EXPECT_EQ(pool.free_pages(), 8 - 2);  // still held without the sequence
  EXPECT_EQ(slots.free_slots(), 1);

  for (int run = 0; run < 2; ++run) {
    KvSequence seq(pool, slots, 100);  // its slot starts zeroed
    prefix.restore(seq);
    EXPECT_EQ(seq.n_past(), 45);
    EXPECT_EQ(std::vector<int32_t>(seq.pages().begin(), seq.pages().end()), kept_pages);
    EXPECT_EQ(state_of(slots, seq.state_slot()), kept_state) << "run " << run;
    fill_state(slots, seq.state_slot(), -50.f);  // a run changes its own state only
    seq.prepare_append(1);                       // copies the shared partial page first
    seq.advance(1);
    EXPECT_NE(seq.pages().back(), kept_pages.back());
  }
  prefix.clear();
  EXPECT_EQ(prefix.n_tokens(), -1);
  EXPECT_EQ(pool.free_pages(), 8);
}

TEST(HeldPrefix, RefusesASequenceOfAnotherPoolOrNothingHeld) {
  auto cpu = create_backend("cpu");
  const CacheLayout layout = small_layout();
  KvPagePool pool(*cpu, layout, DType::F32, 4), other(*cpu, layout, DType::F32, 4);
  RecurrentStateSlots slots(*cpu, layout, 3);
  HeldPrefix prefix(pool);
  KvSequence seq(pool, slots, 10);
  EXPECT_THROW(prefix.restore(seq), Error);
  KvSequence foreign(other, slots, 10);
  EXPECT_THROW(prefix.keep(foreign), Error);
  prefix.keep(seq);
  KvSequence elsewhere(other, slots, 10);
  EXPECT_THROW(prefix.restore(elsewhere), Error);
}

}  // namespace
}  // namespace hostlm
