// Shared by the quantized-weight tests of the CUDA backend: the block types it keeps
// quantized, random valid blocks, and the CPU reference decoders (cpu/quants/blocks.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/quants/blocks.h"
#include "hostlm/dtype.h"
#include "hostlm/half.h"

namespace hostlm::testing {

struct QuantCase {
  DType type;
  const char* file;             // stem of the reference files in tests/data/quants/
  std::vector<int> f16_fields;  // byte offsets of the block's f16 scales
  void (*decode)(const uint8_t* block, float* out);
};

// gtest prints the type name instead of the struct's bytes.
inline void PrintTo(const QuantCase& c, std::ostream* os) { *os << c.file; }

inline const std::vector<QuantCase>& quant_cases() {
  namespace q = cpu::quants;
  static const std::vector<QuantCase> cases = {
      {DType::Q4_0, "q4_0", {0}, q::decode_q4_0},
      {DType::Q4_1, "q4_1", {0, 2}, q::decode_q4_1},
      {DType::Q5_0, "q5_0", {0}, q::decode_q5_0},
      {DType::Q5_1, "q5_1", {0, 2}, q::decode_q5_1},
      {DType::Q8_0, "q8_0", {0}, q::decode_q8_0},
      {DType::IQ4_NL, "iq4_nl", {0}, q::decode_iq4_nl},
      {DType::Q2_K, "q2_k", {80, 82}, q::decode_q2_k},
      {DType::Q3_K, "q3_k", {108}, q::decode_q3_k},
      {DType::Q4_K, "q4_k", {0, 2}, q::decode_q4_k},
      {DType::Q5_K, "q5_k", {0, 2}, q::decode_q5_k},
      {DType::Q6_K, "q6_k", {208}, q::decode_q6_k},
      {DType::IQ4_XS, "iq4_xs", {0}, q::decode_iq4_xs},
  };
  return cases;
}

// Random blocks: random quant bytes, f16 scales of either sign with magnitudes in
// [2^-9, 2^-5) so that products and half-precision tiles stay far from overflow.
inline std::vector<uint8_t> random_blocks(const QuantCase& c, size_t n_blocks, std::mt19937& rng) {
  const DTypeTraits tr = dtype_traits(c.type);
  std::vector<uint8_t> bytes(n_blocks * tr.block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> mag(-9.f, -5.f);
  for (size_t n = 0; n < n_blocks; ++n)
    for (int off : c.f16_fields) {
      const float v = std::exp2(mag(rng)) * (byte(rng) < 128 ? -1.f : 1.f);
      const uint16_t h = f32_to_f16(v);
      std::memcpy(bytes.data() + n * tr.block_bytes + off, &h, 2);
    }
  return bytes;
}

// The blocks decoded by the CPU reference (bit-identical to gguf.quants.dequantize).
inline std::vector<float> dequantize(const QuantCase& c, const std::vector<uint8_t>& bytes) {
  const DTypeTraits tr = dtype_traits(c.type);
  const size_t n_blocks = bytes.size() / tr.block_bytes;
  std::vector<float> out(n_blocks * static_cast<size_t>(tr.block_size));
  for (size_t n = 0; n < n_blocks; ++n)
    c.decode(bytes.data() + n * tr.block_bytes, out.data() + n * tr.block_size);
  return out;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// tests/data/quants/: blocks made by make_quant_reference.py (gguf's quantizer, random bytes,
// edge scales, byte sweeps) and gguf's dequantization of them.
inline std::filesystem::path quant_data_dir() {
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"); src != nullptr && *src != '\0')
    return std::filesystem::path(src) / "tests/data/quants";
  return std::filesystem::path(__FILE__).parent_path() / "../../data/quants";
}

struct QuantReference {
  std::vector<uint8_t> blocks;
  std::vector<float> values;
};

inline QuantReference load_quant_reference(const QuantCase& c) {
  QuantReference r;
  r.blocks = read_bytes(quant_data_dir() / (std::string(c.file) + ".blocks"));
  const std::vector<uint8_t> raw = read_bytes(quant_data_dir() / (std::string(c.file) + ".f32"));
  r.values.resize(raw.size() / sizeof(float));
  std::memcpy(r.values.data(), raw.data(), r.values.size() * sizeof(float));
  return r;
}

}  // namespace hostlm::testing
