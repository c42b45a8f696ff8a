// What the serving engine needs in memory, and how it is doing: the plan printed at load,
// live metrics, and their Prometheus text form for a /metrics route.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "hostlm/dtype.h"

namespace hostlm {

// Bytes for a context size and a number of parallel sequences, computed before anything is
// allocated (Engine prints it to stderr at construction).
struct MemoryPlan {
  std::string backend;
  DType kv_type = DType::F16;
  DType state_type = DType::F32;  // the recurrent states' elements (--state-type)
  int64_t context = 0, max_sequences = 0;
  size_t weight_bytes = 0, scratch_bytes = 0;
  int64_t kv_layers = 0;
  size_t kv_bytes_per_token = 0;   // keys and values of every attention layer
  int64_t kv_pages = 0;            // in the pool: the running sequences' and the prefix cache's
  int64_t kv_pages_for_cache = 0;  // of which beyond max_sequences full contexts
  size_t kv_pool_bytes = 0;
  int64_t state_layers = 0;
  size_t state_bytes_per_sequence = 0;  // conv + delta-rule state of every linear layer
  int64_t snapshot_slots = 0;           // prefix-cache snapshots of that state
  size_t state_bytes = 0;               // running slots plus snapshot slots
  // A model split between the CPU and a GPU: the CPU's layers and their share of the above;
  // host_moe_layers more layers (those after the CPU's) have their experts on the CPU.
  int64_t host_layers = 0, host_moe_layers = 0;
  size_t host_weight_bytes = 0, host_kv_bytes = 0, host_state_bytes = 0;

  size_t total_bytes() const { return weight_bytes + scratch_bytes + kv_pool_bytes + state_bytes; }
  std::string describe() const;  // one readable block, a line per item
};

struct EngineMetrics {
  size_t running = 0, queued = 0;
  uint64_t requests_total = 0;  // finished, whatever the reason
  uint64_t prompt_tokens_total = 0;
  uint64_t prompt_tokens_computed_total = 0;  // the rest came from the prefix cache
  uint64_t cached_tokens_total = 0;
  uint64_t generated_tokens_total = 0;
  uint64_t best_logits_draws_total = 0;   // of which drawn from the best few logits only
  double generate_tokens_per_second = 0;  // over the last 10 seconds
  double prompt_tokens_per_second = 0;    // computed prompt tokens, same window
  int64_t kv_pages_total = 0;
  int64_t kv_pages_used = 0;      // held by running sequences or the prefix cache
  int64_t kv_pages_cached = 0;    // held only by the prefix cache (evictable)
  int64_t kv_pages_reserved = 0;  // promised to running sequences, not yet used
  int64_t state_snapshots = 0, state_snapshot_slots = 0;
  uint64_t prefix_cache_lookups = 0, prefix_cache_hits = 0;
  // Share of prompt tokens served from the prefix cache since start (0 before any prompt).
  double prefix_cache_hit_rate = 0;
  // Scheduler steps, and their time inside the model's forward pass and outside it (making
  // the batch, drawing tokens, handing them to the requests): the second is time an
  // accelerator waits, per step host_seconds / steps.
  uint64_t steps_total = 0;
  double step_model_seconds_total = 0, step_host_seconds_total = 0;
};

// Prometheus text exposition format (version 0.0.4): HELP, TYPE and a sample per metric,
// names prefixed with `prefix` and "_".
std::string prometheus_text(const EngineMetrics& metrics, const std::string& prefix = "hostlm");

}  // namespace hostlm
