#include "hostlm/stop_strings.h"

#include <algorithm>
#include <utility>

namespace hostlm {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty() && std::find(stops_.begin(), stops_.end(), s) == stops_.end())
      stops_.push_back(std::move(s));
}

StopStringMatcher::Pushed StopStringMatcher::push(std::string_view text) {
  Pushed out;
  if (stopped_) return out;
  pending_.append(text);
  if (stops_.empty()) {
    out.text.swap(pending_);
    return out;
  }
  // The earliest stop string wins; at one position the longest (so "\n\n" beats "\n").
  size_t first = std::string::npos;
  const std::string* match = nullptr;
  for (const std::string& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at == std::string::npos) continue;
    if (at < first || (at == first && stop.size() > match->size())) {
      first = at;
      match = &stop;
    }
  }
  if (match) {
    out.text = pending_.substr(0, first);
    out.stopped = true;
    out.matched = *match;
    stopped_ = true;
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that some stop string starts with. Stop strings are whole
  // UTF-8 text, so such a suffix never starts inside a character.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, pending_.size());
    for (size_t n = longest; n > keep; --n)
      if (std::string_view(pending_).substr(pending_.size() - n) ==
          std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
  }
  out.text = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopStringMatcher::finish() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace hostlm
