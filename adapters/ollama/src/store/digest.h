// SHA-256 over streamed bytes (OpenSSL) and digest string helpers.
#pragma once
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace hostlm::ollama {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // finishes the hash: 64 lowercase hex digits

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256_hex(std::string_view bytes);
// "sha256:<hex>" -> "sha256-<hex>" (the blob file name).
std::string blob_file_name(const std::string& digest);

}  // namespace hostlm::ollama
