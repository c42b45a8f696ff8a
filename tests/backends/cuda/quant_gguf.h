// Test GGUFs with quantized weights: a float GGUF rewritten with its linear weights quantized
// to a 32-element block type, by plain round-to-nearest quantizers written for these tests
// (valid blocks with a small error; not the project's `hostlm quantize`), and the same file
// with those weights replaced by their exact dequantization in F32, which is the reference:
// both files hold the very same weight values.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <list>
#include <string>
#include <vector>

#include "cpu/quants/blocks.h"
#include "hostlm/error.h"
#include "hostlm/gguf.h"
#include "hostlm/half.h"
#include "hostlm/tensor_convert.h"

namespace hostlm::testing {

// One 32-value block of `type` (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or IQ4_NL) into `out`.
inline void quantize_block(DType type, const float* x, uint8_t* out) {
  namespace q = cpu::quants;
  float lo = x[0], hi = x[0], amax = 0;
  for (int i = 0; i < 32; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    amax = std::max(amax, std::abs(x[i]));
  }
  // The scale as stored (f16), and its inverse for rounding.
  auto put_scale = [&](float d, int offset) {
    const uint16_t h = f32_to_f16(d);
    std::memcpy(out + offset, &h, 2);
    const float stored = f16_to_f32(h);
    return stored != 0.f ? 1.f / stored : 0.f;
  };
  auto round_clamp = [](float v, int lo_q, int hi_q) {
    return std::clamp(static_cast<int>(std::nearbyint(v)), lo_q, hi_q);
  };
  switch (type) {
    case DType::Q8_0: {
      const float id = put_scale(amax / 127.f, q::q8_0::kD);
      for (int i = 0; i < 32; ++i)
        out[q::q8_0::kQs + i] =
            static_cast<uint8_t>(static_cast<int8_t>(round_clamp(x[i] * id, -127, 127)));
      return;
    }
    case DType::Q4_0:
    case DType::Q5_0: {
      const bool five = type == DType::Q5_0;
      const int half = five ? 16 : 8;
      const float id = put_scale(amax / static_cast<float>(half - 1), 0);
      uint8_t* qs = out + (five ? q::q5_0::kQs : q::q4_0::kQs);
      uint32_t qh = 0;
      std::memset(qs, 0, 16);
      for (int i = 0; i < 32; ++i) {
        const int v = round_clamp(x[i] * id, -half, half - 1) + half;
        qs[i % 16] |= static_cast<uint8_t>((v & 15) << (i < 16 ? 0 : 4));
        qh |= static_cast<uint32_t>(v >> 4) << i;
      }
      if (five) std::memcpy(out + q::q5_0::kQh, &qh, 4);
      return;
    }
    case DType::Q4_1:
    case DType::Q5_1: {
      const bool five = type == DType::Q5_1;
      const int levels = five ? 31 : 15;
      const float id = put_scale((hi - lo) / static_cast<float>(levels), 0);
      const uint16_t m = f32_to_f16(lo);
      std::memcpy(out + 2, &m, 2);
      const float min = f16_to_f32(m);
      uint8_t* qs = out + (five ? q::q5_1::kQs : q::q4_1::kQs);
      uint32_t qh = 0;
      std::memset(qs, 0, 16);
      for (int i = 0; i < 32; ++i) {
        const int v = round_clamp((x[i] - min) * id, 0, levels);
        qs[i % 16] |= static_cast<uint8_t>((v & 15) << (i < 16 ? 0 : 4));
        qh |= static_cast<uint32_t>(v >> 4) << i;
      }
      if (five) std::memcpy(out + q::q5_1::kQh, &qh, 4);
      return;
    }
    case DType::IQ4_NL: {
      const float id = put_scale(amax / 113.f, q::iq4_nl::kD);
      uint8_t* qs = out + q::iq4_nl::kQs;
      std::memset(qs, 0, 16);
      for (int i = 0; i < 32; ++i) {
        int best = 0;
        for (int k = 1; k < 16; ++k)
          if (std::abs(q::kIq4Values[k] - x[i] * id) < std::abs(q::kIq4Values[best] - x[i] * id))
            best = k;
        qs[i % 16] |= static_cast<uint8_t>(best << (i < 16 ? 0 : 4));
      }
      return;
    }
    default:
      throw Error("quantize_block: no test quantizer for " + std::string(dtype_name(type)));
  }
}

// The linear weights of a model file: 2-D (or 3-D stacked experts, "_exps"), rows of whole
// 32-value blocks, not the conv taps.
inline bool is_linear_weight(const GgufTensorInfo& t) {
  const bool shape_ok =
      t.ne.size() == 2 || (t.ne.size() == 3 && t.name.find("_exps.") != std::string::npos);
  return shape_ok && t.ne[0] % 32 == 0 && t.name.find("conv1d") == std::string::npos &&
         t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, ".weight") == 0;
}

// Writes `quantized` (linear weights as `type`) and `dequantized` (the same weights decoded
// to F32) from the float GGUF `src`; everything else is copied as it is.
inline void write_quantized_pair(const std::filesystem::path& src, DType type,
                                 const std::filesystem::path& quantized,
                                 const std::filesystem::path& dequantized) {
  const auto in = GgufFile::open(src);
  const DTypeTraits tr = dtype_traits(type);
  GgufWriter wq(in->alignment()), wd(in->alignment());
  for (const auto& [key, value] : in->metadata()) {
    wq.set(key, value);
    wd.set(key, value);
  }
  std::list<std::vector<uint8_t>> keep;  // tensor data must outlive write(); stable addresses
  for (const GgufTensorInfo& t : in->tensors()) {
    const TensorView view = in->view(t);
    if (!is_linear_weight(t)) {
      wq.add_tensor(t.name, t.type, t.ne, view.data, view.nbytes);
      wd.add_tensor(t.name, t.type, t.ne, view.data, view.nbytes);
      continue;
    }
    const std::vector<float> values = tensor_to_f32(view);
    const size_t n_blocks = values.size() / 32;
    std::vector<uint8_t>& blocks = keep.emplace_back(n_blocks * tr.block_bytes);
    std::vector<uint8_t>& decoded = keep.emplace_back(values.size() * sizeof(float));
    for (size_t b = 0; b < n_blocks; ++b) {
      uint8_t* block = blocks.data() + b * tr.block_bytes;
      quantize_block(type, values.data() + 32 * b, block);
      float y[32];
      switch (type) {
        case DType::Q8_0:
          cpu::quants::decode_q8_0(block, y);
          break;
        case DType::Q4_0:
          cpu::quants::decode_q4_0(block, y);
          break;
        case DType::Q4_1:
          cpu::quants::decode_q4_1(block, y);
          break;
        case DType::Q5_0:
          cpu::quants::decode_q5_0(block, y);
          break;
        case DType::Q5_1:
          cpu::quants::decode_q5_1(block, y);
          break;
        default:
          cpu::quants::decode_iq4_nl(block, y);
          break;
      }
      std::memcpy(decoded.data() + b * 32 * sizeof(float), y, sizeof y);
    }
    wq.add_tensor(t.name, type, t.ne, blocks.data(), blocks.size());
    wd.add_tensor(t.name, DType::F32, t.ne, decoded.data(), decoded.size());
  }
  wq.write(quantized);
  wd.write(dequantized);
}

}  // namespace hostlm::testing
