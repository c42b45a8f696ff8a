// The subset of Go's text/template that Ollama TEMPLATEs use (ecosystem spec 2.2):
// {{ .Field }}, {{- -}} trimming, comments, if / else if / else, range (with $i, $v :=),
// with, variables ($x := ..., $x = ..., $), pipelines, parenthesised calls, and the
// functions eq ne lt le gt ge and or not len index slice print printf json currentDate
// yesterdayDate. Missing fields print as Go's zero value ("missingkey=zero").
//
// Data is JSON (keys in the caller's order). A field `.Name` is looked up as the key "Name", then
// "name", then the snake_case "tool_calls" for `.ToolCalls`, so both Go-style and Ollama API JSON
// work. Objects and arrays print as compact JSON (as Ollama's types do).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hostlm::ollama {

class GoTemplate {
 public:
  // Throws RequestError(kBadRequest, "template: :<line>: <problem>") on a syntax error or a
  // construct outside the subset.
  static GoTemplate parse(std::string_view text);
  ~GoTemplate();
  GoTemplate(GoTemplate&&) noexcept;
  GoTemplate& operator=(GoTemplate&&) noexcept;
  GoTemplate(const GoTemplate&);
  GoTemplate& operator=(const GoTemplate&);

  // Runs the template; hostlm::Error("template: :<line>: ...") on a run-time failure
  // (calling a non-function, index out of range, ...).
  std::string execute(const nlohmann::ordered_json& data) const;
  // Whether the template mentions a field anywhere (`.Messages`, `$.Tools`, ...).
  bool references(std::string_view field) const;

  // Ollama's chat rendering (template.Execute): in messages mode (the template mentions
  // .Messages) the data gets System (system messages joined by "\n\n"), Messages (same-role
  // neighbours merged, tool messages never), Tools, Think, ThinkLevel, IsThinkSet; in legacy
  // mode the template runs once per system/user/assistant turn and the last run is cut after
  // {{ .Response }}. `messages` and `tools` are Ollama API JSON (role, content, thinking,
  // tool_calls [{function: {name, arguments}}], tool_name; tools as in /api/chat).
  // `think` is the request's value: null (not set), a bool, or "low"/"medium"/"high"/"max".
  std::string render_chat(const nlohmann::ordered_json& messages,
                          const nlohmann::ordered_json& tools,
                          const nlohmann::ordered_json& think = nullptr) const;
  // Suffix mode (/api/generate with prompt and suffix): one run with Prompt and Suffix.
  std::string render_generate(const std::string& prompt, const std::string& suffix,
                              const nlohmann::ordered_json& think = nullptr) const;

 private:
  struct Impl;
  explicit GoTemplate(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace hostlm::ollama
