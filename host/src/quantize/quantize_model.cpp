// The quantize driver: chooses every tensor's type, re-encodes the tensors on a thread pool
// (each source row read as float32, then quantized), and writes the GGUF with the input's
// metadata and the new file type.
#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

#include "cpu/dot.h"
#include "cpu/thread_pool.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/model_loader.h"
#include "hostlm/quantize.h"
#include "quantize/block_quant.h"
#include "quantize/type_choice.h"

namespace hostlm {
namespace {

using quantize::ModelFacts;
using quantize::TensorDesc;

struct SchemeName {
  QuantScheme scheme;
  std::string_view name;
};
constexpr SchemeName kSchemes[] = {
    {QuantScheme::Q8_0, "Q8_0"},     {QuantScheme::Q4_0, "Q4_0"},
    {QuantScheme::Q4_K_M, "Q4_K_M"}, {QuantScheme::Q4_K_S, "Q4_K_S"},
    {QuantScheme::Q5_K_M, "Q5_K_M"}, {QuantScheme::Q6_K, "Q6_K"},
    {QuantScheme::IQ4_XS, "IQ4_XS"}, {QuantScheme::F16, "F16"},
    {QuantScheme::BF16, "BF16"},     {QuantScheme::MXFP4_MOE, "MXFP4_MOE"},
};

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ModelFacts model_facts(const GgufFile& f) {
  ModelFacts facts;
  const std::string arch = f.get_string("general.architecture").value_or("");
  facts.n_layer = f.get_int(arch + ".block_count").value_or(0);
  auto first_int = [&](const std::string& key) -> std::optional<int64_t> {
    const GgufValue* v = f.find(key);
    if (v == nullptr) return std::nullopt;
    if (const GgufArray* a = v->as_array()) {
      if (a->elements.empty()) return std::nullopt;
      return a->elements.front().as_int();
    }
    return v->as_int();
  };
  const int64_t n_head = first_int(arch + ".attention.head_count").value_or(0);
  const int64_t n_head_kv = first_int(arch + ".attention.head_count_kv").value_or(n_head);
  facts.n_gqa = n_head_kv > 0 ? n_head / n_head_kv : 0;
  facts.n_expert = f.get_int(arch + ".expert_count").value_or(0);
  return facts;
}

// Re-encodes one tensor into `out`, reading rows in chunks of about 64K values per task.
void requantize(cpu::ThreadPool& pool, const GgufFile& f, const GgufTensorInfo& info, DType to,
                std::vector<uint8_t>& out) {
  const TensorView view = f.view(info);
  const int64_t cols = static_cast<int64_t>(info.ne[0]);
  const int64_t rows = view.n_elements() / std::max<int64_t>(1, cols);
  const cpu::RowToF32Fn to_f32 = cpu::row_to_f32_kernel(info.type);
  if (to_f32 == nullptr)
    throw Error(f.path().string() + ": tensor '" + info.name + "' has type " +
                std::string(dtype_name(info.type)) + ", which cannot be read for quantization");
  const std::optional<size_t> out_row = dtype_bytes(to, static_cast<uint64_t>(cols));
  if (!out_row)
    throw Error(f.path().string() + ": tensor '" + info.name + "' rows of " + std::to_string(cols) +
                " values cannot be stored as " + std::string(dtype_name(to)));
  out.resize(*out_row * static_cast<size_t>(rows));
  const size_t in_row = info.nbytes / static_cast<size_t>(std::max<int64_t>(1, rows));
  const auto* src = static_cast<const uint8_t*>(view.data);
  const int64_t chunk = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, cols));
  pool.parallel_for((rows + chunk - 1) / chunk, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buf;
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t r0 = c * chunk, nr = std::min(chunk, rows - r0);
      buf.resize(static_cast<size_t>(nr * cols));
      for (int64_t r = 0; r < nr; ++r) to_f32(src + (r0 + r) * in_row, buf.data() + r * cols, cols);
      quantize::quantize_rows(to, buf.data(), out.data() + r0 * *out_row, nr, cols);
    }
  });
}

// The storage type a Hugging Face checkpoint converts to without losing precision.
DType lossless_type(const HfCheckpoint& hf) {
  bool any_bf16 = false, any_f16 = false;
  for (const TensorView& t : hf.tensors()) {
    if (t.type == DType::F32 && t.shape.size() >= 2) return DType::F32;
    any_bf16 |= t.type == DType::BF16;
    any_f16 |= t.type == DType::F16;
  }
  if (any_bf16 && any_f16) return DType::F32;
  return any_f16 ? DType::F16 : DType::BF16;
}

}  // namespace

std::optional<QuantScheme> parse_quant_scheme(std::string_view name) {
  for (const SchemeName& s : kSchemes) {
    if (s.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(name[i])) == s.name[i];
    if (same) return s.scheme;
  }
  return std::nullopt;
}

std::string_view quant_scheme_name(QuantScheme scheme) {
  for (const SchemeName& s : kSchemes)
    if (s.scheme == scheme) return s.name;
  return "?";
}

std::string quant_scheme_names() {
  std::string all;
  for (const SchemeName& s : kSchemes) all += (all.empty() ? "" : ", ") + std::string(s.name);
  return all;
}

QuantizeSummary quantize_gguf_file(const std::filesystem::path& in,
                                   const std::filesystem::path& out, QuantScheme scheme,
                                   const QuantizeOptions& options) {
  const std::unique_ptr<GgufFile> f = GgufFile::open(in);
  std::vector<TensorDesc> descs;
  for (const GgufTensorInfo& t : f->tensors()) descs.push_back({t.name, t.type, t.ne});
  const std::vector<DType> types = quantize::choose_types(descs, model_facts(*f), scheme);
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] != descs[i].type && !quantize::can_quantize(types[i]))
      throw Error(in.string() + ": tensor '" + descs[i].name + "' would need type " +
                  std::string(dtype_name(types[i])) + ", which hostlm cannot write");

  GgufWriter writer(f->alignment());
  for (const auto& [key, value] : f->metadata()) writer.set(key, value);
  writer.set("general.quantization_version", GgufValue::u32(2));
  writer.set("general.file_type", GgufValue::u32(quantize::scheme_file_type(scheme)));

  cpu::ThreadPool pool(options.threads > 0 ? options.threads : default_threads());
  std::vector<std::vector<uint8_t>> data(descs.size());
  QuantizeSummary summary;
  const auto& infos = f->tensors();
  for (size_t i = 0; i < infos.size(); ++i) {
    const GgufTensorInfo& info = infos[i];
    const void* bytes = f->view(info).data;
    size_t nbytes = info.nbytes;
    if (types[i] != info.type) {
      requantize(pool, *f, info, types[i], data[i]);
      bytes = data[i].data();
      nbytes = data[i].size();
      ++summary.n_requantized;
    }
    // As llama-quantize writes it: trailing unit dimensions dropped (ggml_n_dims), so that a
    // [1, H] gate stored as {H, 1} comes out {H}.
    std::vector<uint64_t> ne = info.ne;
    while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
    writer.add_tensor(info.name, types[i], ne, bytes, nbytes);
    summary.bytes_in += info.nbytes;
    summary.bytes_out += nbytes;
    if (options.progress)
      options.progress({i + 1, infos.size(), info.name, info.type, types[i], info.nbytes, nbytes});
  }
  summary.n_tensors = infos.size();
  writer.write(out);
  return summary;
}

QuantizeSummary quantize_model(PluginRegistry& registry, const std::filesystem::path& in,
                               const std::filesystem::path& out, QuantScheme scheme,
                               const QuantizeOptions& options) {
  if (!std::filesystem::is_directory(in)) return quantize_gguf_file(in, out, scheme, options);
  // A Hugging Face folder: the plugin converts it (names, transforms, tokenizer) to a
  // temporary GGUF next to the output, which is then quantized and removed.
  OpenedModelFiles opened(in);
  if (!opened.files().hf) throw Error(in.string() + ": not a Hugging Face model folder");
  ArchitecturePlugin& plugin = registry.plugin_for(opened.files().architecture);
  std::filesystem::path tmp = out;
  tmp += ".convert-tmp.gguf";
  struct Remove {
    std::filesystem::path path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } remove_tmp{tmp};
  plugin.convert_to_gguf(*opened.files().hf, lossless_type(*opened.files().hf), tmp);
  return quantize_gguf_file(tmp, out, scheme, options);
}

}  // namespace hostlm
