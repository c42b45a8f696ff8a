#include "digest.h"

#include <openssl/evp.h>

#include <cctype>

#include "hostlm/error.h"
#include "hostlm/ollama/store.h"

namespace hostlm::ollama {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw Error("sha256: cannot initialise OpenSSL digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(const void* data, size_t n) {
  if (n && EVP_DigestUpdate(ctx_->md, data, n) != 1) throw Error("sha256: digest update failed");
}

std::string Sha256::hex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, out, &len) != 1) throw Error("sha256: digest final failed");
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += digits[out[i] >> 4];
    s += digits[out[i] & 15];
  }
  return s;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

std::string normalize_digest(std::string_view digest) {
  // ^sha256[:-][0-9a-fA-F]{64}$, as Ollama checks it.
  bool ok = digest.size() == 71 && digest.substr(0, 6) == "sha256" &&
            (digest[6] == ':' || digest[6] == '-');
  std::string out = "sha256:";
  for (size_t i = 7; ok && i < digest.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(digest[i]);
    ok = std::isxdigit(c) != 0;
    out += static_cast<char>(std::tolower(c));
  }
  if (!ok) throw bad_request("invalid digest format");
  return out;
}

std::string blob_file_name(const std::string& digest) {
  return "sha256-" + normalize_digest(digest).substr(7);
}

}  // namespace hostlm::ollama
