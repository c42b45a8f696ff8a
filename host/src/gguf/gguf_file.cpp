#include <unordered_map>

#include "core/mapped_file.h"
#include "gguf/gguf_format.h"
#include "gguf/gguf_open.h"
#include "gguf/gguf_parser.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm {
namespace gguf {
namespace {

class GgufFileImpl final : public GgufFile {
 public:
  GgufFileImpl(std::filesystem::path path, std::unique_ptr<MappedFile> mapping,
               std::span<const unsigned char> bytes)
      : path_(std::move(path)), mapping_(std::move(mapping)), bytes_(bytes) {
    parsed_ = parse_gguf(bytes_, path_.string());
    // Views into the parsed vectors, which are never modified after this point.
    for (size_t i = 0; i < parsed_.metadata.size(); ++i)
      keys_.emplace(parsed_.metadata[i].first, i);
    for (size_t i = 0; i < parsed_.tensors.size(); ++i) names_.emplace(parsed_.tensors[i].name, i);
  }

  const std::filesystem::path& path() const override { return path_; }
  uint32_t version() const override { return parsed_.version; }
  uint64_t alignment() const override { return parsed_.alignment; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const override {
    return parsed_.metadata;
  }
  const GgufValue* find(std::string_view key) const override {
    auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : &parsed_.metadata[it->second].second;
  }
  const std::vector<GgufTensorInfo>& tensors() const override { return parsed_.tensors; }
  const GgufTensorInfo* find_tensor(std::string_view name) const override {
    auto it = names_.find(name);
    return it == names_.end() ? nullptr : &parsed_.tensors[it->second];
  }

  TensorView view(const GgufTensorInfo& info) const override {
    // `info` may be a copy or come from another file; never hand out a pointer past the end.
    uint64_t nbytes = 0;
    const auto problem = tensor_shape_problem(static_cast<uint32_t>(info.type), info.ne, nbytes);
    const uint64_t room =
        parsed_.data_offset <= bytes_.size() ? bytes_.size() - parsed_.data_offset : 0;
    if (problem || nbytes != info.nbytes || info.offset > room || nbytes > room - info.offset)
      throw Error(path_.string() + ": tensor " + quote_name(info.name) +
                  " does not describe data inside this file" + (problem ? ": " + *problem : ""));
    TensorView v;
    v.name = info.name;
    v.type = info.type;
    v.shape.assign(info.ne.rbegin(), info.ne.rend());  // ggml's ne is innermost first
    v.data = bytes_.data() + parsed_.data_offset + info.offset;
    v.nbytes = static_cast<size_t>(nbytes);
    return v;
  }

 private:
  std::filesystem::path path_;
  std::unique_ptr<MappedFile> mapping_;
  std::span<const unsigned char> bytes_;
  ParsedGguf parsed_;
  std::unordered_map<std::string_view, size_t> keys_;
  std::unordered_map<std::string_view, size_t> names_;
};

}  // namespace

std::unique_ptr<GgufFile> open_gguf_bytes(std::span<const unsigned char> bytes,
                                          const std::filesystem::path& name) {
  return std::make_unique<GgufFileImpl>(name, nullptr, bytes);
}

}  // namespace gguf

std::unique_ptr<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  auto mapping = std::make_unique<MappedFile>(path);
  const auto bytes = mapping->bytes();
  return std::make_unique<gguf::GgufFileImpl>(path, std::move(mapping), bytes);
}

}  // namespace hostlm
