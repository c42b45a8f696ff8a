// The GPT-2 byte <-> unicode mapping that lets byte-level BPE store every byte as a printable
// character: byte-level tokens in tokenizer.json and GGUF are written with it.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hostlm::tok {

class ByteUnicode {
 public:
  static const ByteUnicode& get();

  // The UTF-8 text of the character that stands for byte b.
  const std::string& encode(uint8_t b) const { return utf8_[b]; }
  std::string encode(std::string_view bytes) const;
  // The byte a character stands for, or nullopt for a character outside the table.
  std::optional<uint8_t> decode(char32_t cp) const {
    if (cp >= byte_of_.size() || byte_of_[cp] < 0) return std::nullopt;
    return static_cast<uint8_t>(byte_of_[cp]);
  }
  // All characters of `token` mapped back to bytes; nullopt if one is outside the table.
  // (`token` must be valid UTF-8.)
  std::optional<std::string> decode(std::string_view token) const;

 private:
  ByteUnicode();
  std::array<std::string, 256> utf8_;
  // Every mapped character is below U+0100 + 68.
  std::array<int16_t, 0x100 + 68> byte_of_{};
};

}  // namespace hostlm::tok
