#include "cors.h"

namespace hostlm::http {
namespace {

// Glob with '*' matching any run of characters.
bool glob(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

OriginPolicy::OriginPolicy(std::vector<std::string> extra) {
  for (const char* host : {"localhost", "127.0.0.1", "0.0.0.0", "[::1]"})
    for (const char* scheme : {"http://", "https://"}) {
      patterns_.push_back(std::string(scheme) + host);
      patterns_.push_back(std::string(scheme) + host + ":*");
    }
  for (const char* app :
       {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"})
    patterns_.push_back(app);
  for (std::string& p : extra)
    if (!p.empty()) patterns_.push_back(std::move(p));
}

bool OriginPolicy::allowed(std::string_view origin, std::string_view host) const {
  if (origin.empty()) return true;
  if (!host.empty()) {
    const size_t scheme_end = origin.find("://");
    if (scheme_end != std::string_view::npos && origin.substr(scheme_end + 3) == host) return true;
  }
  for (const std::string& p : patterns_)
    if (glob(p, origin)) return true;
  return false;
}

}  // namespace hostlm::http
