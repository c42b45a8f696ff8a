// A bound on the depth of recursive-descent parsers that read outside input (grammars, JSON
// Schemas, templates from requests): each level is a few stack frames, so unbounded nesting in
// a few hundred KB of text would overflow the stack.
#pragma once
#include <string>

namespace hostlm {

// One level of `depth` for as long as it lives. At `max` levels already open it calls
// fail("nested deeper than <max> levels"), which must throw.
class NestingLevel {
 public:
  template <class Fail>
  NestingLevel(int& depth, int max, Fail&& fail) : depth_(depth) {
    if (depth_ >= max) fail("nested deeper than " + std::to_string(max) + " levels");
    ++depth_;
  }
  ~NestingLevel() { --depth_; }
  NestingLevel(const NestingLevel&) = delete;
  NestingLevel& operator=(const NestingLevel&) = delete;

 private:
  int& depth_;
};

}  // namespace hostlm
