// Stop strings over streamed text ("stop": ["\n\n", "END"] in Ollama and OpenAI requests).
//
// Generated text arrives a token at a time, and a stop string may span several tokens, so text
// that could still turn out to be the start of a stop string is held back until the next
// piece decides it. What has been released never contains a stop string, and the released
// pieces plus finish() add up to the text before the first stop string (or all of it).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace hostlm {

class StopStringMatcher {
 public:
  // Empty strings are ignored (they would stop before the first character).
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Pushed {
    std::string text;      // safe to show now
    bool stopped = false;  // a stop string completed: `text` ends right before it
    std::string matched;   // the stop string that completed
  };
  // Appends generated text. After a stop string has completed, returns nothing.
  Pushed push(std::string_view text);
  // End of generation: what was held back (empty after a stop).
  std::string finish();

  bool stopped() const { return stopped_; }
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // held back: a suffix that is a prefix of some stop string
  bool stopped_ = false;
};

}  // namespace hostlm
