// How deep GBNF groups, JSON Schema sub-schemas and pattern groups may nest: their text comes
// from requests (a client's JSON Schema, a --grammar file). No real grammar or schema comes
// near the bound.
#pragma once
#include "hostlm/nesting_level.h"

namespace hostlm::grammar {

constexpr int kMaxNesting = 256;

}  // namespace hostlm::grammar
