// GGUF container (versions 2 and 3): a reader over mmap and an atomic writer.
// Every malformed input is reported as hostlm::Error("<file>: <problem>"); nothing aborts.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "hostlm/tensor_view.h"

namespace hostlm {

enum class GgufType : uint32_t {
  // ggml's numbering, kept as a table.
  // clang-format off
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8,
  ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
  // clang-format on
};

struct GgufArray;

// One metadata value. Integers keep their declared width in `type`; the accessors accept any
// integer width (and any float width) as the spec asks.
class GgufValue {
 public:
  using Storage =
      std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<const GgufArray>>;
  GgufValue() = default;
  GgufValue(GgufType type, Storage storage) : type_(type), storage_(std::move(storage)) {}

  static GgufValue u32(uint32_t v) { return {GgufType::U32, uint64_t{v}}; }
  static GgufValue i32(int32_t v) { return {GgufType::I32, int64_t{v}}; }
  static GgufValue u64(uint64_t v) { return {GgufType::U64, v}; }
  static GgufValue f32(float v) { return {GgufType::F32, double{v}}; }
  static GgufValue boolean(bool v) { return {GgufType::BOOL, v}; }
  static GgufValue string(std::string v) { return {GgufType::STRING, std::move(v)}; }
  static GgufValue array(GgufType element_type, std::vector<GgufValue> elements);

  GgufType type() const { return type_; }
  bool is_integer() const;
  bool is_float() const { return type_ == GgufType::F32 || type_ == GgufType::F64; }
  std::optional<int64_t> as_int() const;   // any integer type (u64 above INT64_MAX: nullopt)
  std::optional<double> as_float() const;  // any float or integer type
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;  // nullptr unless STRING
  const GgufArray* as_array() const;     // nullptr unless ARRAY
  // Exact stored value: u64 above INT64_MAX has no other lossless accessor, and writers
  // need to check that a value built by hand matches its declared type.
  const Storage& storage() const { return storage_; }

 private:
  GgufType type_ = GgufType::U8;
  Storage storage_ = uint64_t{0};
};

struct GgufArray {
  GgufType element_type = GgufType::U8;
  std::vector<GgufValue> elements;
};

struct GgufTensorInfo {
  std::string name;
  DType type = DType::F32;
  std::vector<uint64_t> ne;  // ggml order: ne[0] is contiguous
  uint64_t offset = 0;       // relative to the data section
  uint64_t nbytes = 0;
};

class GgufFile {
 public:
  // Maps and validates the whole file (header, metadata, tensor infos, every tensor inside
  // the file and aligned). Throws hostlm::Error naming the file and the problem.
  static std::unique_ptr<GgufFile> open(const std::filesystem::path& path);
  virtual ~GgufFile() = default;

  virtual const std::filesystem::path& path() const = 0;
  virtual uint32_t version() const = 0;
  virtual uint64_t alignment() const = 0;
  virtual const std::vector<std::pair<std::string, GgufValue>>& metadata() const = 0;
  virtual const GgufValue* find(std::string_view key) const = 0;
  virtual const std::vector<GgufTensorInfo>& tensors() const = 0;
  virtual const GgufTensorInfo* find_tensor(std::string_view name) const = 0;
  // Tensor as a TensorView (PyTorch-order shape, pointer into the mapping).
  virtual TensorView view(const GgufTensorInfo& info) const = 0;

  // Typed look-ups: nullopt when absent; hostlm::Error naming file and key when the value
  // has the wrong type.
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
};

// Builds a GGUF version 3 file. Tensor data is referenced, not copied: it must stay valid
// until write() returns. write() goes to a temporary file, fsyncs and renames into place.
class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}
  void set(std::string key, GgufValue value);  // replaces an existing key, keeps order
  // ne in ggml order (ne[0] contiguous).
  void add_tensor(std::string name, DType type, std::vector<uint64_t> ne, const void* data,
                  size_t nbytes);
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    GgufTensorInfo info;
    const void* data;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace hostlm
