#include <algorithm>
#include <map>
#include <memory>
#include <system_error>

#include "hostlm/error.h"
#include "hostlm/safetensors.h"
#include "safetensors/json_text.h"
#include "safetensors/quote.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/shard_index.h"

namespace hostlm {
namespace {

namespace fs = std::filesystem;
using safetensors::MappedSafetensors;

class FolderCheckpoint final : public HfCheckpoint {
 public:
  explicit FolderCheckpoint(const fs::path& folder);

  const fs::path& folder() const override { return folder_; }
  const nlohmann::json& config() const override { return config_; }
  const std::vector<TensorView>& tensors() const override { return tensors_; }
  const TensorView* find(std::string_view name) const override;

 private:
  void read_config();
  void open_indexed(const fs::path& index_path);
  void open_unindexed();
  // Takes every tensor of `file`; names must be unique across the checkpoint.
  void add(std::unique_ptr<MappedSafetensors> file);

  fs::path folder_;
  nlohmann::json config_;
  std::vector<std::unique_ptr<MappedSafetensors>> files_;
  std::vector<TensorView> tensors_;
  // Every tensor name -> the file holding it, to report duplicates and unusable dtypes.
  std::map<std::string, const MappedSafetensors*, std::less<>> owner_;
};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

FolderCheckpoint::FolderCheckpoint(const fs::path& folder) : folder_(folder) {
  std::error_code ec;
  if (!fs::is_directory(folder_, ec)) throw Error(folder_.string() + ": not a directory");
  read_config();
  const fs::path index = folder_ / "model.safetensors.index.json";
  if (fs::exists(index, ec))
    open_indexed(index);
  else
    open_unindexed();
  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
}

void FolderCheckpoint::read_config() {
  const fs::path path = folder_ / "config.json";
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(path.string() + ": missing; a Hugging Face model folder needs config.json");
  config_ = safetensors::read_json_file(path);
  if (!config_.is_object()) throw Error(path.string() + ": not a JSON object");
}

void FolderCheckpoint::open_indexed(const fs::path& index_path) {
  const safetensors::ShardIndex index = safetensors::read_shard_index(index_path);
  std::map<fs::path, const MappedSafetensors*> by_shard;
  for (const fs::path& shard : index.shards) {
    const fs::path path = folder_ / shard;
    std::error_code ec;
    // Anything present but unusable (a directory, a FIFO) is reported by MappedFile instead.
    if (!fs::exists(path, ec))
      throw Error(path.string() + ": missing shard file (listed in " + index_path.string() + ")");
    auto file = std::make_unique<MappedSafetensors>(path);
    by_shard[shard] = file.get();
    add(std::move(file));
  }
  for (const auto& e : index.weight_map) {
    const MappedSafetensors* file = by_shard.at(e.shard);
    if (!file->holds(e.tensor))
      throw Error(index_path.string() + ": tensor " + safetensors::quote_name(e.tensor) +
                  " is listed in " + file->path().string() + ", which does not hold it");
  }
}

void FolderCheckpoint::open_unindexed() {
  const fs::path single = folder_ / "model.safetensors";
  if (is_file(single)) {
    add(std::make_unique<MappedSafetensors>(single));
    return;
  }
  // Some exporters write differently named files and no index; take them all, in a fixed order.
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors" && is_file(it->path()))
      found.push_back(it->path());
  if (ec) throw Error(folder_.string() + ": cannot list: " + ec.message());
  if (found.empty())
    throw Error(folder_.string() +
                ": no model.safetensors, model.safetensors.index.json or other *.safetensors file");
  std::sort(found.begin(), found.end());
  for (const fs::path& p : found) add(std::make_unique<MappedSafetensors>(p));
}

void FolderCheckpoint::add(std::unique_ptr<MappedSafetensors> file) {
  const auto claim = [&](const std::string& name) {
    const auto [it, inserted] = owner_.emplace(name, file.get());
    if (!inserted)
      throw Error(file->path().string() + ": tensor " + safetensors::quote_name(name) +
                  " is also in " + it->second->path().string());
  };
  for (const TensorView& t : file->tensors()) claim(t.name);
  for (const auto& u : file->unsupported()) claim(u.first);
  tensors_.insert(tensors_.end(), file->tensors().begin(), file->tensors().end());
  files_.push_back(std::move(file));
}

const TensorView* FolderCheckpoint::find(std::string_view name) const {
  if (const TensorView* t = safetensors::find_sorted(tensors_, name)) return t;
  const auto it = owner_.find(name);
  // The owning file raises the "unsupported dtype" error with its own path in it.
  return it == owner_.end() ? nullptr : it->second->find(name);
}

}  // namespace

std::unique_ptr<HfCheckpoint> HfCheckpoint::open(const std::filesystem::path& folder) {
  return std::make_unique<FolderCheckpoint>(folder);
}

}  // namespace hostlm
