// UTF-8 helpers shared by the tokenizer files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hostlm::tok {

// Decodes the code point at s[i] of *valid* UTF-8 and advances i past it.
inline char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    i += 1;
    return b0;
  }
  auto cont = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F);
  };
  char32_t cp;
  if (b0 < 0xE0) {
    cp = (char32_t{b0 & 0x1Fu} << 6) | cont(1);
    i += 2;
  } else if (b0 < 0xF0) {
    cp = (char32_t{b0 & 0x0Fu} << 12) | (cont(1) << 6) | cont(2);
    i += 3;
  } else {
    cp = (char32_t{b0 & 0x07u} << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
    i += 4;
  }
  return cp;
}

// The code point that ends just before s[i] (valid UTF-8, i > 0).
char32_t previous_code_point(std::string_view s, size_t i);

void append_utf8(std::string& out, char32_t cp);

// Appends `in` to `out` with every ill-formed subsequence replaced by U+FFFD, one per maximal
// subpart (Unicode 3.9, "U+FFFD substitution of maximal subparts"), which is what Rust's
// String::from_utf8_lossy and therefore HF decode do. When `final` is false an unfinished
// but so far valid sequence at the end is not consumed; returns the number of bytes consumed.
size_t append_utf8_lossy(std::string_view in, std::string& out, bool final);

bool is_valid_utf8(std::string_view s);

// Unicode White_Space (what Rust's char::is_whitespace tests).
bool is_white_space(char32_t cp);

}  // namespace hostlm::tok
