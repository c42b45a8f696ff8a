#include "safetensors/quote.h"

namespace hostlm::safetensors {

std::string quote_name(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  // Names are short in real files; a hostile one must not turn a message into megabytes.
  constexpr size_t kMaxShown = 256;
  const bool cut = name.size() > kMaxShown;
  if (cut) {
    name = name.substr(0, kMaxShown);
    // Do not end in the middle of a UTF-8 sequence.
    while (!name.empty() && (static_cast<unsigned char>(name.back()) & 0xc0) == 0x80)
      name.remove_suffix(1);
    if (!name.empty() && static_cast<unsigned char>(name.back()) >= 0xc0) name.remove_suffix(1);
  }
  std::string out = "'";
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + (cut ? "'..." : "'");
}

}  // namespace hostlm::safetensors
