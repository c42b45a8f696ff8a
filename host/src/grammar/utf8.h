// UTF-8 helpers for the grammar room: decoding literal text and encoding code points.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hostlm::grammar {

// How many continuation bytes follow a lead byte, or -1 for a byte that cannot start a
// sequence (a continuation byte, C0/C1 overlong leads, F5 and above).
inline int utf8_tail_length(uint8_t b) {
  if (b < 0x80) return 0;
  if (b >= 0xC2 && b <= 0xDF) return 1;
  if (b >= 0xE0 && b <= 0xEF) return 2;
  if (b >= 0xF0 && b <= 0xF4) return 3;
  return -1;
}

// The payload bits a lead byte contributes.
inline uint32_t utf8_lead_bits(uint8_t b, int tail) {
  static constexpr uint8_t kMask[4] = {0x7F, 0x1F, 0x0F, 0x07};
  return b & kMask[tail];
}

// Whether a finished sequence of 1 + `tail` bytes decoded to `cp` is a valid scalar value
// (no overlong forms, no surrogates, nothing past U+10FFFF).
inline bool utf8_valid_scalar(uint32_t cp, int tail) {
  static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[tail] || cp > 0x10FFFF) return false;
  return cp < 0xD800 || cp > 0xDFFF;
}

// Decodes the code point at text[pos], advancing pos; nullopt on invalid UTF-8.
inline std::optional<uint32_t> utf8_next(std::string_view text, size_t& pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const int tail = utf8_tail_length(lead);
  if (tail < 0 || pos + 1 + tail > text.size()) return std::nullopt;
  uint32_t cp = utf8_lead_bits(lead, tail);
  for (int i = 1; i <= tail; ++i) {
    const auto b = static_cast<uint8_t>(text[pos + i]);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (!utf8_valid_scalar(cp, tail)) return std::nullopt;
  pos += 1 + tail;
  return cp;
}

inline void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace hostlm::grammar
