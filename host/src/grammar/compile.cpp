// Turns parsed rules into the flat form the matcher walks, and refuses what the matcher
// cannot run: undefined rules, a missing root, and left recursion (a rule that can reach
// itself without consuming a character would make stack expansion loop forever).
#include <string>
#include <vector>

#include "grammar/raw_grammar.h"
#include "hostlm/error.h"

namespace hostlm::grammar {
namespace {

std::string at(int line, int col) { return std::to_string(line) + ":" + std::to_string(col); }

std::vector<bool> nullable_rules(const RawGrammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : g.rules[r].alts) {
        bool all = true;
        for (const Elem& e : alt) {
          if (e.kind != ElemKind::Rule || !nullable[e.arg]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

void refuse_left_recursion(const RawGrammar& g) {
  const std::vector<bool> nullable = nullable_rules(g);
  // first[r]: the rules r can start with, before consuming anything.
  std::vector<std::vector<uint32_t>> first(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const auto& alt : g.rules[r].alts) {
      for (const Elem& e : alt) {
        if (e.kind != ElemKind::Rule) break;
        first[r].push_back(e.arg);
        if (!nullable[e.arg]) break;
      }
    }
  }
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> color(g.rules.size(), kNew);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t start = 0; start < g.rules.size(); ++start) {
    if (color[start] != kNew) continue;
    stack.emplace_back(start, 0);
    color[start] = kOpen;
    while (!stack.empty()) {
      auto& [r, i] = stack.back();
      if (i == first[r].size()) {
        color[r] = kDone;
        stack.pop_back();
        continue;
      }
      const uint32_t next = first[r][i++];
      if (color[next] == kOpen) {
        const RawRule& bad = g.rules[next];
        if (bad.generated) {
          throw Error("GBNF " + at(bad.line, bad.col) +
                      ": left recursion through a group or a repetition of something that can "
                      "match empty text");
        }
        throw Error("GBNF " + at(bad.line, bad.col) + ": rule '" + bad.name +
                    "' is left-recursive (it can reach itself before consuming any text); "
                    "rewrite it with repetition, e.g. a ::= b (\"+\" b)*");
      }
      if (color[next] == kNew) {
        color[next] = kOpen;
        stack.emplace_back(next, 0);
      }
    }
  }
}

}  // namespace

CompiledGrammar compile_raw(RawGrammar raw, std::string_view root) {
  for (const RawRule& r : raw.rules) {
    if (!r.defined)
      throw Error("GBNF " + at(r.ref_line, r.ref_col) + ": undefined rule '" + r.name + "'");
  }
  CompiledGrammar g;
  bool found = false;
  for (size_t r = 0; r < raw.rules.size(); ++r) {
    if (!raw.rules[r].generated && raw.rules[r].name == root) {
      g.root = static_cast<uint32_t>(r);
      found = true;
    }
  }
  if (!found) throw Error("GBNF: no rule named '" + std::string(root) + "' (the start rule)");
  refuse_left_recursion(raw);
  g.sets = std::move(raw.sets);
  for (RawRule& r : raw.rules) {
    Rule rule;
    rule.name = std::move(r.name);
    rule.line = r.line;
    rule.col = r.col;
    for (const auto& alt : r.alts) {
      rule.alts.push_back(static_cast<uint32_t>(g.elems.size()));
      g.elems.insert(g.elems.end(), alt.begin(), alt.end());
      g.elems.push_back({ElemKind::End, 0});
    }
    g.rules.push_back(std::move(rule));
  }
  return g;
}

}  // namespace hostlm::grammar
