#include "engine/memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "hostlm/kv_cache.h"

namespace hostlm::engine {
namespace {

constexpr size_t kGiB = size_t{1} << 30;
// Running contexts (in tokens, all sequences) from which a GPU's pool gets no automatic
// prefix-cache reserve.
constexpr int64_t kNoReserveTokens = 65536;

int64_t pages_for(int64_t tokens) { return (tokens + kKvPageTokens - 1) / kKvPageTokens; }

std::string gib(size_t bytes) {
  return std::to_string(static_cast<double>(bytes) / static_cast<double>(kGiB)).substr(0, 5) +
         " GiB";
}

}  // namespace

MemoryPlan plan_memory(Model& model, const EngineOptions& o) {
  const CacheLayout layout = model.cache_layout();
  if (layout.empty() || model.backend() == nullptr)
    throw Error("the model does not expose its cache layout, so the engine cannot serve it");
  if (!is_kv_type(o.kv_type))
    throw Error("the KV cache cannot be stored as " + std::string(dtype_name(o.kv_type)) +
                " (choose f32, f16 or q8_0)");
  if (o.kv_type == DType::Q8_0 && layout.head_dim % 32 != 0)
    throw Error("a Q8_0 KV cache needs a head size that is a multiple of 32, not " +
                std::to_string(layout.head_dim) + " (use f16)");
  if (o.context < 1) throw Error("the context must hold at least one token");
  MemoryPlan p;
  p.backend = model.backend()->name();
  p.kv_type = o.kv_type;
  p.state_type = layout.recurrent_type;
  p.context = o.context;
  p.max_sequences = o.max_sequences;
  p.weight_bytes = model.info().weight_bytes;
  p.scratch_bytes = model.info().scratch_bytes;
  p.kv_layers = layout.n_kv_layers;
  const size_t page_bytes =
      kv_page_bytes(o.kv_type, layout) * 2 * static_cast<size_t>(layout.n_kv_layers);
  p.kv_bytes_per_token = page_bytes / kKvPageTokens;
  const int64_t running_pages = o.max_sequences * pages_for(o.context);
  if (o.kv_pool_bytes > 0 && page_bytes > 0) {
    p.kv_pages = static_cast<int64_t>(o.kv_pool_bytes / page_bytes);
    if (p.kv_pages < pages_for(o.context))
      throw Error("kv_pool_bytes (" + std::to_string(o.kv_pool_bytes) + ") holds " +
                  std::to_string(p.kv_pages) + " pages, fewer than one context of " +
                  std::to_string(o.context) + " tokens needs (" +
                  std::to_string(pages_for(o.context)) + ")");
  } else {
    int64_t extra = 0;
    // On a GPU the whole pool is allocated at load. Running contexts of 64K tokens or more
    // are seldom full, so there the automatic reserve is none: the cache lives in the pages
    // running requests leave free (as llama.cpp's slots and vLLM's block pool keep theirs),
    // and a long window costs no more memory than it does with them. On the CPU a page costs
    // nothing until it is written, so the reserve stays.
    const bool no_reserve = o.prefix_cache_bytes == 0 && p.backend != "cpu" &&
                            running_pages * kKvPageTokens >= kNoReserveTokens;
    if (o.prefix_cache && !no_reserve) {
      // Automatic: a quarter more than the running contexts, but at most 1 GiB, at least 64
      // pages. A quarter of a 262K window would be 4 GiB on the 27B shape.
      const size_t cache_bytes =
          o.prefix_cache_bytes > 0
              ? o.prefix_cache_bytes
              : std::min(static_cast<size_t>(running_pages) * page_bytes / 4, kGiB);
      extra = page_bytes > 0 ? std::max<int64_t>(64, static_cast<int64_t>(cache_bytes / page_bytes))
                             : 0;
    }
    p.kv_pages = running_pages + extra;
  }
  p.kv_pages_for_cache = std::max<int64_t>(0, p.kv_pages - running_pages);
  p.kv_pool_bytes = page_bytes * static_cast<size_t>(p.kv_pages);
  p.state_layers = layout.n_state_layers;
  p.state_bytes_per_sequence = static_cast<size_t>(layout.state_floats()) * sizeof(float);
  const size_t per = std::max<size_t>(p.state_bytes_per_sequence, 1);
  if (!o.prefix_cache)
    p.snapshot_slots = 0;
  else if (o.state_cache_bytes > 0)
    p.snapshot_slots = static_cast<int64_t>(o.state_cache_bytes / per);
  else {
    const int64_t per_sequence = p.backend != "cpu" && o.context >= kLongWindowTokens ? 2 : 4;
    p.snapshot_slots =
        std::max<int64_t>(2, std::min<int64_t>(per_sequence * int64_t{o.max_sequences},
                                               static_cast<int64_t>(kGiB / per)));
  }
  p.state_bytes =
      p.state_bytes_per_sequence * static_cast<size_t>(o.max_sequences + p.snapshot_slots);
  p.host_layers = model.info().host_layers;
  p.host_moe_layers = model.info().host_moe_layers;
  if (p.host_layers > 0 || p.host_moe_layers > 0) {
    p.host_weight_bytes = model.info().host_weight_bytes;
    const CachePlacement placement = CachePlacement::of(model);
    const auto off_device = [&](const std::vector<Backend*>& layers) {
      return static_cast<size_t>(std::count_if(layers.begin(), layers.end(),
                                               [&](Backend* b) { return b != model.backend(); }));
    };
    if (layout.n_kv_layers > 0)
      p.host_kv_bytes = p.kv_pool_bytes / static_cast<size_t>(layout.n_kv_layers) *
                        off_device(placement.kv_layers);
    if (layout.n_state_layers > 0)
      p.host_state_bytes = p.state_bytes / static_cast<size_t>(layout.n_state_layers) *
                           off_device(placement.state_layers);
  }
  if (p.backend == "cpu") {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const size_t ram =
        pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
    if (ram > 0 && p.total_bytes() > ram)
      throw Error("not enough memory: " + std::to_string(o.max_sequences) + " sequences of " +
                  std::to_string(o.context) + " tokens need " + gib(p.total_bytes()) +
                  " but this machine has " + gib(ram) +
                  " (lower the context, the parallel sequences or the cache bounds, or use a "
                  "smaller KV type)");
  }
  return p;
}

}  // namespace hostlm::engine
