// Unicode NFC through utf8proc, with a quick check so that text already in NFC (nearly all
// real text) is neither copied nor re-composed.
#pragma once
#include <string>
#include <string_view>

namespace hostlm::tok {

// `text` must be valid UTF-8. Returns false when it is already NFC (out is untouched);
// otherwise writes the normalised text into `out` and returns true.
bool nfc_normalize(std::string_view text, std::string& out);

}  // namespace hostlm::tok
