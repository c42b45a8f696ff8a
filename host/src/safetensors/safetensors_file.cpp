#include "safetensors/safetensors_file.h"

#include <algorithm>

#include "hostlm/error.h"
#include "safetensors/quote.h"

namespace hostlm::safetensors {

const TensorView* find_sorted(const std::vector<TensorView>& tensors, std::string_view name) {
  const auto it = std::lower_bound(
      tensors.begin(), tensors.end(), name,
      [](const TensorView& t, std::string_view n) { return std::string_view(t.name) < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

MappedSafetensors::MappedSafetensors(const std::filesystem::path& path)
    : path_(path),
      map_(path),
      header_(parse_safetensors(map_.data(), map_.size(), path.string())) {}

const TensorView* MappedSafetensors::find(std::string_view name) const {
  if (const TensorView* t = find_sorted(header_.tensors, name)) return t;
  const auto u = header_.unsupported.find(name);
  if (u != header_.unsupported.end())
    throw Error(path_.string() + ": tensor " + quote_name(u->first) + " has dtype " + u->second +
                ", which hostlm does not support");
  return nullptr;
}

bool MappedSafetensors::holds(std::string_view name) const {
  return find_sorted(header_.tensors, name) != nullptr || header_.unsupported.contains(name);
}

}  // namespace hostlm::safetensors

namespace hostlm {

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  return std::make_unique<safetensors::MappedSafetensors>(path);
}

}  // namespace hostlm
