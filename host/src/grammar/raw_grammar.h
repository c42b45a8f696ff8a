// The parser's output before compilation: rules with their alternatives as separate element
// lists, and where each rule was defined or first used, for error messages.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "grammar/ir.h"

namespace hostlm::grammar {

struct RawRule {
  std::string name;
  std::vector<std::vector<Elem>> alts;
  bool defined = false;
  bool generated = false;         // made for a group or a repetition, not named by the user
  int line = 0, col = 0;          // definition, or the group / repetition it stands for
  int ref_line = 0, ref_col = 0;  // first reference, for "undefined rule"
};

struct RawGrammar {
  std::vector<RawRule> rules;
  std::vector<CharSet> sets;
};

// Lays the rules out flat and refuses undefined rules, a missing root and left recursion.
CompiledGrammar compile_raw(RawGrammar raw, std::string_view root);

}  // namespace hostlm::grammar
