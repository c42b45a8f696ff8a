// Small text helpers shared by the Modelfile, parameter and template code: UTF-8 runes,
// Go's notion of printable, Go-style quoting and number formatting.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace hostlm::ollama {

// Decodes the rune at s[i] and advances i; invalid bytes give U+FFFD, one byte at a time
// (as Go's decoder does).
char32_t next_rune(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t r);
// Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space.
bool is_go_printable(char32_t r);
// Go's strings.TrimSpace (Unicode white space).
std::string_view trim_space(std::string_view s);
// Go's strconv.Quote.
std::string go_quote(std::string_view s);
// A number as fmt's %v prints a Go value: whole numbers as integers, others in the shortest
// form that reads back to the same double.
std::string format_number(double v);
std::string to_lower(std::string_view s);

}  // namespace hostlm::ollama
