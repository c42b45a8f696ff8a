# Run as `cmake -DINPUT=page.html -DOUTPUT=page.cpp -P embed_page.cmake`: writes a C++ file
# whose hostlm::http::chat_page_html() returns the bytes of INPUT, unchanged. Bytes rather
# than a raw string literal, so that no sequence in the page can end the literal early.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# 16 bytes a line keeps the generated file readable in an editor and in compiler errors.
string(REPEAT "0x..," 16 line)  # CMake's regular expressions have no {n}
string(REGEX REPLACE "(${line})" "\\1\n" bytes "${bytes}")
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
file(WRITE "${OUTPUT}"
"// Generated from ${INPUT} by embed_page.cmake: do not edit.
#include \"hostlm/http/chat_page.h\"

namespace hostlm::http {
namespace {
constexpr unsigned char kPage[${size} + 1] = {
${bytes}0};
}  // namespace

std::string_view chat_page_html() { return {reinterpret_cast<const char*>(kPage), ${size}}; }

}  // namespace hostlm::http
")
