// Names from a file (tensor names, shard names, JSON keys) shown inside error messages.
#pragma once
#include <string>
#include <string_view>

namespace hostlm::safetensors {

// 'name' in single quotes, with control bytes written as \xNN (a NUL would otherwise end the
// message at what(), a newline would forge a second log line) and overlong names cut short.
std::string quote_name(std::string_view name);

}  // namespace hostlm::safetensors
