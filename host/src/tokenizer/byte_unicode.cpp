#include "tokenizer/byte_unicode.h"

#include "tokenizer/utf8.h"

namespace hostlm::tok {

const ByteUnicode& ByteUnicode::get() {
  static const ByteUnicode table;
  return table;
}

ByteUnicode::ByteUnicode() {
  byte_of_.fill(-1);
  // Printable Latin-1 bytes stand for themselves; the other 68, in byte order, take the
  // code points from U+0100 on.
  char32_t next_extra = 0x100;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t cp = printable ? static_cast<char32_t>(b) : next_extra++;
    append_utf8(utf8_[b], cp);
    byte_of_[cp] = static_cast<int16_t>(b);
  }
}

std::string ByteUnicode::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += utf8_[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> ByteUnicode::decode(std::string_view token) const {
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const auto b = decode(next_code_point(token, i));
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

}  // namespace hostlm::tok
