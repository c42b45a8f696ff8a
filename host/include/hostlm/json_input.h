// JSON text from outside the process (request bodies, C API arguments, tool-call arguments
// sent as strings), parsed into ordered_json in time linear in its size and with a bound on
// nesting. ordered_json's own parse is quadratic in an object's keys (a 3 MB body of 256K keys
// took 78 s), and although nlohmann's parser does not recurse, what walks the result does
// (dump(), the JSON Schema converter, template rendering): a few hundred KB of '[' would
// overflow a server thread's stack. Requests nest a few dozen levels at most.
#pragma once
#include <nlohmann/json.hpp>
#include <string_view>

#include "hostlm/error.h"

namespace hostlm {

constexpr int kMaxInputJsonDepth = 512;

// Nesting past the bound: "nested deeper than 512 levels".
class JsonTooDeep : public Error {
 public:
  using Error::Error;
  ~JsonTooDeep() override;
};

// The value nlohmann::ordered_json::parse gives (a repeated key keeps its first place and its
// last value); throws its nlohmann::json::parse_error for malformed text, and JsonTooDeep when
// arrays and objects nest deeper than `max_depth`.
nlohmann::ordered_json parse_input_json(std::string_view text, int max_depth = kMaxInputJsonDepth);
// The same without exceptions: a discarded value (is_discarded()) for either failure.
nlohmann::ordered_json parse_input_json_or_discarded(std::string_view text,
                                                     int max_depth = kMaxInputJsonDepth);

}  // namespace hostlm
