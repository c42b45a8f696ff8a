#include "text_table.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "text_util.h"

namespace hostlm::ollama {
namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t cut = s.find(sep, start);
    out.emplace_back(s.substr(start, cut == std::string_view::npos ? cut : cut - start));
    if (cut == std::string_view::npos) return out;
    start = cut + 1;
  }
}

// Breaks one paragraph into lines of at most `limit` columns where the words allow,
// minimizing the squared shortfall of every line but the last (dynamic programming from
// the end: the best break after word i given the best breaks after every later word).
std::vector<std::string> wrap_paragraph(const std::string& text, size_t limit) {
  const std::vector<std::string> words = split(text, ' ');
  const size_t n = words.size();
  std::vector<int64_t> width(n);
  for (size_t i = 0; i < n; ++i) {
    width[i] = static_cast<int64_t>(display_width(words[i]));
    limit = std::max(limit, static_cast<size_t>(width[i]));
  }
  const auto lim = static_cast<int64_t>(limit);
  constexpr int64_t kTooLong = 100000;   // penalty of a line over the limit
  auto span = [&](size_t i, size_t j) {  // columns of words i..j-1 joined by spaces
    int64_t w = static_cast<int64_t>(j - i) - 1;
    for (size_t k = i; k < j; ++k) w += width[k];
    return w;
  };
  std::vector<int64_t> cost(n, std::numeric_limits<int32_t>::max());
  std::vector<size_t> next(n, n);
  for (size_t i = n; i-- > 0;) {
    if (span(i, n) <= lim) {
      cost[i] = 0;
      next[i] = n;
      continue;
    }
    for (size_t j = i + 1; j < n; ++j) {
      const int64_t w = span(i, j), d = lim - w;
      const int64_t c = d * d + cost[j] + (w > lim ? kTooLong : 0);
      if (c < cost[i]) {
        cost[i] = c;
        next[i] = j;
      }
    }
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < n; i = next[i]) {
    std::string line;
    for (size_t k = i; k < next[i]; ++k) line += (k > i ? " " : "") + words[k];
    lines.push_back(std::move(line));
  }
  return lines;
}

// The lines of one cell and the widest of them.
std::vector<std::string> cell_lines(const std::string& cell, size_t wrap, size_t& widest) {
  const std::vector<std::string> paragraphs = split(cell, '\n');
  size_t longest = 0;
  for (const auto& p : paragraphs) longest = std::max(longest, display_width(p));
  widest = std::min(longest, wrap);
  std::vector<std::string> lines;
  for (size_t i = 0; i < paragraphs.size(); ++i) {
    if (i > 0) lines.emplace_back(" ");
    for (auto& line : wrap_paragraph(paragraphs[i], widest)) {
      widest = std::max(widest, display_width(line));
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

}  // namespace

size_t display_width(std::string_view text) {
  size_t columns = 0;
  for (size_t i = 0; i < text.size();) {
    const int w = utf8proc_charwidth(static_cast<utf8proc_int32_t>(next_rune(text, i)));
    columns += static_cast<size_t>(std::max(w, 0));
  }
  return columns;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows, size_t wrap) {
  std::map<size_t, size_t> column_width;
  std::vector<std::vector<std::vector<std::string>>> cells(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      size_t widest = 0;
      cells[r].push_back(cell_lines(rows[r][c], wrap, widest));
      column_width[c] = std::max(column_width[c], widest);
    }
  }
  std::string out;
  for (const auto& row : cells) {
    size_t height = 0;
    for (const auto& lines : row) height = std::max(height, lines.size());
    for (size_t line = 0; line < height; ++line) {
      for (size_t c = 0; c < row.size(); ++c) {
        const std::string& text = line < row[c].size() ? row[c][line] : "  ";
        out += text;
        const size_t w = display_width(text);
        if (w < column_width[c]) out.append(column_width[c] - w, ' ');
        out += "    ";
      }
      out += '\n';
    }
  }
  return out;
}

}  // namespace hostlm::ollama
