#include <algorithm>

#include "gguf/atomic_file.h"
#include "gguf/gguf_emit.h"
#include "gguf/gguf_format.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"

namespace hostlm {

void GgufWriter::set(std::string key, GgufValue value) {
  // Checked here too, so a bad value is reported where it is made rather than at write().
  if (auto p = gguf::value_problem(value))
    throw Error("GgufWriter: key " + gguf::quote_name(key) + ": " + *p);
  auto it = std::find_if(metadata_.begin(), metadata_.end(),
                         [&](const auto& kv) { return kv.first == key; });
  if (it != metadata_.end()) {
    it->second = std::move(value);
  } else {
    metadata_.emplace_back(std::move(key), std::move(value));
  }
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<uint64_t> ne,
                            const void* data, size_t nbytes) {
  const std::string ctx = "GgufWriter: tensor " + gguf::quote_name(name) + ": ";
  for (const PendingTensor& t : tensors_)
    if (t.info.name == name)
      throw Error("GgufWriter: duplicate tensor name " + gguf::quote_name(name));
  uint64_t expected = 0;
  if (auto p = gguf::tensor_shape_problem(static_cast<uint32_t>(type), ne, expected))
    throw Error(ctx + *p);
  if (expected != nbytes)
    throw Error(ctx + "has " + std::to_string(nbytes) + " bytes of data, its type and shape need " +
                std::to_string(expected));
  if (!data) throw Error(ctx + "no data");
  PendingTensor t{{std::move(name), type, std::move(ne), 0, nbytes}, data};
  tensors_.push_back(std::move(t));
}

void GgufWriter::write(const std::filesystem::path& path) const {
  std::vector<gguf::EmitTensor> tensors;
  tensors.reserve(tensors_.size());
  for (const PendingTensor& t : tensors_) tensors.push_back({&t.info, t.data});
  gguf::AtomicFile file(path);
  gguf::emit_gguf(alignment_, metadata_, tensors, path.string(),
                  [&](const void* data, size_t size) { file.write(data, size); });
  file.commit();
}

}  // namespace hostlm
