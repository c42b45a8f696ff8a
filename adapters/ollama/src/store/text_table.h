// The borderless text tables of Ollama's CLI (`ollama show`): its table writer set to no
// borders, no extra white space, left alignment and four spaces of padding.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace hostlm::ollama {

// Every cell is padded to its column's width and followed by four spaces. A cell wider than
// `wrap` display columns is broken between words with the least raggedness (the sum of
// squared shortfalls from `wrap`; a word longer than that widens the limit); its
// continuation lines stand beside two-space filler cells, as Ollama's output has them.
// Rows may have different numbers of cells: each prints its own.
std::string render_table(const std::vector<std::vector<std::string>>& rows, size_t wrap);

// Terminal columns of UTF-8 text: East Asian wide characters count two, combining marks
// none.
size_t display_width(std::string_view text);

}  // namespace hostlm::ollama
