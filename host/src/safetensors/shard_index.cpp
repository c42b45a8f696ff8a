#include "safetensors/shard_index.h"

#include <algorithm>

#include "hostlm/error.h"
#include "safetensors/json_text.h"
#include "safetensors/quote.h"

namespace hostlm::safetensors {
namespace {

// A shard name comes from a downloaded file; it may only name something inside the folder.
std::filesystem::path safe_shard_path(const std::string& name, const std::string& tensor,
                                      const std::string& label) {
  const std::string where =
      label + ": shard " + quote_name(name) + " of tensor " + quote_name(tensor) + " ";
  if (name.empty())
    throw Error(label + ": tensor " + quote_name(tensor) + " has an empty shard name");
  // A NUL would silently cut the name short when it reaches the operating system.
  if (name.find('\0') != std::string::npos) throw Error(where + "contains a NUL character");
  const std::filesystem::path p(name);
  if (p.has_root_path()) throw Error(where + "is an absolute path");
  for (const auto& part : p)
    if (part == "..") throw Error(where + "escapes the model folder ('..')");
  std::filesystem::path normal = p.lexically_normal();
  if (normal.empty() || normal == "." || !normal.has_filename())
    throw Error(where + "does not name a file");
  return normal;
}

}  // namespace

ShardIndex read_shard_index(const std::filesystem::path& index_path) {
  const std::string label = index_path.string();
  const nlohmann::json index = read_json_file(index_path);
  if (!index.is_object()) throw Error(label + ": not a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object())
    throw Error(label + ": missing or non-object \"weight_map\"");
  if (wm->empty()) throw Error(label + ": \"weight_map\" lists no tensors");

  ShardIndex out;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string())
      throw Error(label + ": shard of tensor " + quote_name(it.key()) + " is not a string");
    out.weight_map.push_back({it.key(), safe_shard_path(it->get<std::string>(), it.key(), label)});
    out.shards.push_back(out.weight_map.back().shard);
  }
  std::sort(out.shards.begin(), out.shards.end());
  out.shards.erase(std::unique(out.shards.begin(), out.shards.end()), out.shards.end());
  return out;
}

}  // namespace hostlm::safetensors
