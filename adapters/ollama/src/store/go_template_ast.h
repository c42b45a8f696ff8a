// The parse tree of a Go text/template (the subset Ollama uses), shared by the parser, the
// executor and Ollama's legacy-mode "cut after .Response" rewrite.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hostlm/ollama/go_template.h"

namespace hostlm::ollama::tmpl {

struct Pipe;

// One operand of a command.
struct Arg {
  enum class Kind { kField, kVariable, kDot, kFunction, kString, kInt, kFloat, kBool, kNil, kPipe };
  Kind kind = Kind::kDot;
  std::string text;                 // variable name ("$x"), function name, string value
  std::vector<std::string> fields;  // .A.B after the term (a field is a chain on dot)
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::shared_ptr<Pipe> pipe;  // kPipe: a parenthesised pipeline
  int line = 0;
};

struct Command {
  std::vector<Arg> args;
  int line = 0;
};

struct Pipe {
  std::vector<std::string> decl;  // variables declared ($x :=) or assigned ($x =)
  bool assign = false;
  std::vector<Command> cmds;
  int line = 0;
};

struct Node;
using List = std::vector<Node>;

struct Node {
  enum class Kind { kText, kAction, kIf, kWith, kRange, kBreak, kContinue };
  Kind kind = Kind::kText;
  std::string text;
  std::shared_ptr<Pipe> pipe;
  std::shared_ptr<List> list;
  std::shared_ptr<List> else_list;  // may hold one kIf/kWith node for `else if` / `else with`
  int line = 0;
};

}  // namespace hostlm::ollama::tmpl

namespace hostlm::ollama {

struct GoTemplate::Impl {
  tmpl::List root;
  std::string source;
};

namespace tmpl {
// Parses template text; RequestError(kBadRequest, "template: :<line>: ...") on failure.
List parse(std::string_view text);
// Runs a tree on `data`; hostlm::Error("template: :<line>: executing: ...") on failure.
std::string execute(const List& root, const nlohmann::ordered_json& data);
}  // namespace tmpl

}  // namespace hostlm::ollama
