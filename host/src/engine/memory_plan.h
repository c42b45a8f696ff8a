// Sizing the engine's memory from a model and the engine options (internal to the engine).
#pragma once
#include "hostlm/engine.h"

namespace hostlm::engine {

// Pages, slots and bytes for `options` (automatic bounds resolved). Throws hostlm::Error for
// options that cannot work (a KV type the model's shape cannot store, a pool smaller than
// one context) and, on the CPU, when the total exceeds the machine's memory.
MemoryPlan plan_memory(Model& model, const EngineOptions& options);

}  // namespace hostlm::engine
