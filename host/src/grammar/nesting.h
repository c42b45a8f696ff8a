// A bound on nesting for the grammar front ends (GBNF groups, JSON Schema sub-schemas, pattern
// groups). Each parser here is recursive, and their text comes from requests (a client's JSON
// Schema, a --grammar file): every level is a few stack frames, so a few hundred KB of '(' or
// of nested "items" would overflow the stack. No real grammar or schema comes near the bound.
#pragma once
#include <string>

namespace hostlm::grammar {

constexpr int kMaxNesting = 256;

// One level for as long as it lives. `fail` takes the message and must throw.
class NestingLevel {
 public:
  template <class Fail>
  NestingLevel(int& depth, Fail&& fail) : depth_(depth) {
    if (depth_ >= kMaxNesting)
      fail("nested deeper than " + std::to_string(kMaxNesting) + " levels");
    ++depth_;
  }
  ~NestingLevel() { --depth_; }
  NestingLevel(const NestingLevel&) = delete;
  NestingLevel& operator=(const NestingLevel&) = delete;

 private:
  int& depth_;
};

}  // namespace hostlm::grammar
