// Serialises metadata and tensors as a GGUF version 3 image through a byte sink. Kept apart
// from file handling so the fuzzer can round-trip parsed files in memory.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hostlm/gguf.h"

namespace hostlm::gguf {

struct EmitTensor {
  const GgufTensorInfo* info;  // name, type and ne are used; offset is recomputed
  const void* data;            // info->nbytes bytes
};

using Sink = std::function<void(const void* data, size_t size)>;

// Validates everything before the first byte reaches `sink` and throws
// hostlm::Error("<name>: <problem>"). Adds general.alignment (u32) when `alignment` is not
// the default and the key is absent; a present key must be a u32 equal to `alignment`.
void emit_gguf(uint64_t alignment, const std::vector<std::pair<std::string, GgufValue>>& metadata,
               const std::vector<EmitTensor>& tensors, const std::string& name, const Sink& sink);

}  // namespace hostlm::gguf
