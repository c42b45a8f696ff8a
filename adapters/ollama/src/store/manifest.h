// Docker v2 manifests as Ollama writes them (spec 1.7), and JSON bytes written the way Go's
// encoding/json writes them, so that the same content gets the same digest in both tools.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostlm/ollama/store.h"

namespace hostlm::ollama {

struct Manifest {
  Layer config;
  std::vector<Layer> layers;

  // Throws hostlm::Error("<where>: ...") when the bytes are not a manifest.
  static Manifest parse(std::string_view bytes, const std::string& where);
  std::string to_bytes() const;  // compact JSON and a trailing newline
};

// Compact JSON with Go's HTML escaping of <, > and & and a trailing newline (Encoder.Encode).
std::string go_json(const nlohmann::ordered_json& value);

}  // namespace hostlm::ollama
