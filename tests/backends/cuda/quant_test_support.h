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
#include "cpu/quants/iq_blocks.h"
#include "hostlm/dtype.h"
#include "hostlm/half.h"

namespace hostlm::testing {

struct QuantCase {
  DType type;
  const char* file;             // stem of the reference files in tests/data/quants/
  std::vector<int> f16_fields;  // byte offsets of the block's f16 scales
  void (*decode)(const uint8_t* block, float* out);
  // For a block scale that is no plain f16 field (IQ1_M): writes f16 bits `h` into `block`.
  void (*place_f16)(uint8_t* block, uint16_t h) = nullptr;
};

// MXFP4's scale is an E8M0 byte: the power of two at or below |f16 value|.
inline void place_mxfp4_scale(uint8_t* block, uint16_t h) {
  const int exponent = std::ilogb(std::abs(f16_to_f32(h)));
  block[0] = static_cast<uint8_t>(128 + exponent);  // 2^(e - 128) as gguf reads it
}

// IQ1_M keeps its f16 scale in the top nibbles of its four 16-bit scale words.
inline void place_iq1_m_scale(uint8_t* block, uint16_t h) {
  for (int i = 0; i < 4; ++i) {
    uint8_t& top = block[48 + 2 * i + 1];
    top = static_cast<uint8_t>((top & 0x0f) | (((h >> (4 * i)) & 15) << 4));
  }
}

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
      {DType::IQ2_XXS, "iq2_xxs", {0}, q::decode_iq2_xxs},
      {DType::IQ2_XS, "iq2_xs", {0}, q::decode_iq2_xs},
      {DType::IQ2_S, "iq2_s", {0}, q::decode_iq2_s},
      {DType::IQ3_XXS, "iq3_xxs", {0}, q::decode_iq3_xxs},
      {DType::IQ3_S, "iq3_s", {0}, q::decode_iq3_s},
      {DType::IQ1_S, "iq1_s", {0}, q::decode_iq1_s},
      {DType::IQ1_M, "iq1_m", {}, q::decode_iq1_m, place_iq1_m_scale},
      {DType::TQ1_0, "tq1_0", {52}, q::decode_tq1_0},
      {DType::TQ2_0, "tq2_0", {64}, q::decode_tq2_0},
      {DType::MXFP4, "mxfp4", {}, q::decode_mxfp4, place_mxfp4_scale},
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
  for (size_t n = 0; n < n_blocks; ++n) {
    for (int off : c.f16_fields) {
      const float v = std::exp2(mag(rng)) * (byte(rng) < 128 ? -1.f : 1.f);
      const uint16_t h = f32_to_f16(v);
      std::memcpy(bytes.data() + n * tr.block_bytes + off, &h, 2);
    }
    if (c.place_f16 != nullptr) {
      const float v = std::exp2(mag(rng)) * (byte(rng) < 128 ? -1.f : 1.f);
      c.place_f16(bytes.data() + n * tr.block_bytes, f32_to_f16(v));
    }
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
