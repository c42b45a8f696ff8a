// model.safetensors.index.json: which shard file holds which tensor.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace hostlm::safetensors {

struct ShardIndex {
  struct Entry {
    std::string tensor;
    std::filesystem::path shard;  // relative to the model folder, lexically normalised
  };
  std::vector<Entry> weight_map;              // sorted by tensor name
  std::vector<std::filesystem::path> shards;  // each referenced shard once, sorted
};

// Throws hostlm::Error("<index path>: <problem>"), also for shard names that would leave the
// model folder (absolute paths, '..').
ShardIndex read_shard_index(const std::filesystem::path& index_path);

}  // namespace hostlm::safetensors
