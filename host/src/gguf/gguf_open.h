// Opening a GGUF image that is already in memory; used by the fuzzer, which would otherwise
// spend its time writing temporary files.
#pragma once
#include <filesystem>
#include <memory>
#include <span>

#include "hostlm/gguf.h"

namespace hostlm::gguf {

// `bytes` must outlive the result; views point into it. `name` stands for the file path in
// errors and in path().
std::unique_ptr<GgufFile> open_gguf_bytes(std::span<const unsigned char> bytes,
                                          const std::filesystem::path& name);

}  // namespace hostlm::gguf
