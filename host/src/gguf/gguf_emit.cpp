#include "gguf/gguf_emit.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <unordered_set>
#include <variant>

#include "gguf/gguf_format.h"
#include "hostlm/error.h"

namespace hostlm::gguf {
namespace {

class Buffer {
 public:
  template <class T>
  void le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      bytes_.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void string(std::string_view s) {
    le<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void value(const GgufValue& v) {
    // value_problem() has already checked that each storage matches its type.
    const auto& st = v.storage();
    switch (v.type()) {
      case GgufType::U8:
        le(static_cast<uint8_t>(std::get<uint64_t>(st)));
        break;
      case GgufType::I8:
        le(static_cast<uint8_t>(std::get<int64_t>(st)));
        break;
      case GgufType::U16:
        le(static_cast<uint16_t>(std::get<uint64_t>(st)));
        break;
      case GgufType::I16:
        le(static_cast<uint16_t>(std::get<int64_t>(st)));
        break;
      case GgufType::U32:
        le(static_cast<uint32_t>(std::get<uint64_t>(st)));
        break;
      case GgufType::I32:
        le(static_cast<uint32_t>(std::get<int64_t>(st)));
        break;
      case GgufType::U64:
        le(std::get<uint64_t>(st));
        break;
      case GgufType::I64:
        le(static_cast<uint64_t>(std::get<int64_t>(st)));
        break;
      case GgufType::F32:
        le(std::bit_cast<uint32_t>(static_cast<float>(std::get<double>(st))));
        break;
      case GgufType::F64:
        le(std::bit_cast<uint64_t>(std::get<double>(st)));
        break;
      case GgufType::BOOL:
        le(static_cast<uint8_t>(std::get<bool>(st) ? 1 : 0));
        break;
      case GgufType::STRING:
        string(std::get<std::string>(st));
        break;
      case GgufType::ARRAY: {
        const GgufArray& a = *std::get<std::shared_ptr<const GgufArray>>(st);
        le(static_cast<uint32_t>(a.element_type));
        le<uint64_t>(a.elements.size());
        for (const GgufValue& e : a.elements) value(e);
        break;
      }
    }
  }
  const std::vector<unsigned char>& bytes() const { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

uint64_t padding(uint64_t n, uint64_t alignment) {
  const uint64_t rem = n % alignment;
  return rem == 0 ? 0 : alignment - rem;
}

}  // namespace

void emit_gguf(uint64_t alignment, const std::vector<std::pair<std::string, GgufValue>>& metadata,
               const std::vector<EmitTensor>& tensors, const std::string& name, const Sink& sink) {
  auto fail = [&](const std::string& problem) { throw Error(name + ": " + problem); };
  // Readers such as gguf-py only accept a u32 general.alignment.
  if (!is_power_of_two(alignment) || alignment > std::numeric_limits<uint32_t>::max())
    fail("alignment " + std::to_string(alignment) + " is not a power of two that fits in u32");

  bool has_alignment_key = false;
  uint64_t n_values = 0;
  std::unordered_set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    if (!keys.insert(key).second) fail("duplicate key " + quote_name(key));
    if (auto p = value_problem(value)) fail("key " + quote_name(key) + ": " + *p);
    n_values += value_count(value);
    if (n_values > kMaxMetadataValues)
      fail("metadata holds more than " + std::to_string(kMaxMetadataValues) +
           " values in total, more than readers accept");
    if (key == kAlignmentKey) {
      const auto* v = std::get_if<uint64_t>(&value.storage());
      if (value.type() != GgufType::U32 || !v || *v != alignment)
        fail(std::string(kAlignmentKey) + " must be a u32 equal to the writer's alignment " +
             std::to_string(alignment));
      has_alignment_key = true;
    }
  }
  const bool add_alignment_key = !has_alignment_key && alignment != kDefaultAlignment;

  std::unordered_set<std::string_view> names;
  for (const EmitTensor& t : tensors) {
    const GgufTensorInfo& info = *t.info;
    if (!names.insert(info.name).second) fail("duplicate tensor name " + quote_name(info.name));
    uint64_t nbytes = 0;
    if (auto p = tensor_shape_problem(static_cast<uint32_t>(info.type), info.ne, nbytes))
      fail("tensor " + quote_name(info.name) + ": " + *p);
    if (nbytes != info.nbytes)
      fail("tensor " + quote_name(info.name) + ": has " + std::to_string(info.nbytes) +
           " bytes of data, its type and shape need " + std::to_string(nbytes));
    if (!t.data) fail("tensor " + quote_name(info.name) + ": no data");
  }

  Buffer head;
  head.le(kMagic);
  head.le(kWriteVersion);
  head.le<uint64_t>(tensors.size());
  head.le<uint64_t>(metadata.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [key, value] : metadata) {
    head.string(key);
    head.le(static_cast<uint32_t>(value.type()));
    head.value(value);
  }
  if (add_alignment_key) {
    head.string(kAlignmentKey);
    head.le(static_cast<uint32_t>(GgufType::U32));
    head.le(static_cast<uint32_t>(alignment));
  }
  uint64_t offset = 0;
  for (const EmitTensor& t : tensors) {
    const GgufTensorInfo& info = *t.info;
    head.string(info.name);
    head.le(static_cast<uint32_t>(info.ne.size()));
    for (uint64_t d : info.ne) head.le(d);
    head.le(static_cast<uint32_t>(info.type));
    head.le(offset);
    offset += info.nbytes + padding(info.nbytes, alignment);
  }
  sink(head.bytes().data(), head.bytes().size());

  // From a small buffer: alignments of up to 2^31 are legal.
  static const unsigned char kZeros[4096] = {};
  auto pad = [&](uint64_t n) {
    for (; n > 0; n -= std::min<uint64_t>(n, sizeof kZeros))
      sink(kZeros, static_cast<size_t>(std::min<uint64_t>(n, sizeof kZeros)));
  };
  pad(padding(head.bytes().size(), alignment));
  for (const EmitTensor& t : tensors) {
    sink(t.data, static_cast<size_t>(t.info->nbytes));
    pad(padding(t.info->nbytes, alignment));
  }
}

}  // namespace hostlm::gguf
