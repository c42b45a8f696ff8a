// The Go text/template subset (spec 2.2): language rules one by one, parse and run-time
// errors, and Ollama's chat rendering on ChatML templates with tools and thinking written
// for these tests in the style of the Qwen templates Ollama publishes.
#include "hostlm/ollama/go_template.h"

#include <gtest/gtest.h>

#include "hostlm/error.h"
#include "hostlm/ollama/errors.h"

namespace hostlm::ollama {
namespace {

using json = nlohmann::ordered_json;

std::string run(std::string_view text, const json& data = json::object()) {
  return GoTemplate::parse(text).execute(data);
}

std::string parse_error(std::string_view text) {
  try {
    GoTemplate::parse(text);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string run_error(std::string_view text, const json& data) {
  try {
    GoTemplate::parse(text).execute(data);
  } catch (const RequestError& e) {
    return std::string("parse: ") + e.what();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GoTemplate, PrintsFieldsAndTrimsWhitespace) {
  const json data = {{"Name", "Ada"}, {"Count", 3},       {"Ratio", 0.25},
                     {"On", true},    {"List", {1, "a"}}, {"Map", {{"b", 1}, {"a", "<x>"}}}};
  EXPECT_EQ(run("Hi {{ .Name }}!", data), "Hi Ada!");
  EXPECT_EQ(run("a  \n {{- .Name -}} \n  b", data), "aAdab");
  EXPECT_EQ(run("a {{- 3 }} {{-3}}", data), "a3 -3");  // "{{-3}}" is a number, not a trim
  EXPECT_EQ(run("{{ .Count }} {{ .Ratio }} {{ .On }} {{ .List }} {{ .Map }}", data),
            R"(3 0.25 true [1,"a"] {"b":1,"a":"\u003cx\u003e"})");
  EXPECT_EQ(run("[{{ .Missing }}][{{ .Missing.Deeper }}]", data), "[][]");
  EXPECT_EQ(run("x{{/* a comment */}}y {{- /* trimmed */ -}} z", data), "xyz");
  EXPECT_EQ(run("{{ \"q\\\"\\n\" }}{{ `raw\\n` }}{{ 'a' }}{{ 0x10 }}{{ 1.5e3 }}", data),
            "q\"\nraw\\n9716"
            "1500");
}

TEST(GoTemplate, LooksUpGoStyleAndApiStyleNames) {
  const json data = {{"tool_calls", {{{"function", {{"name", "f"}}}}}}, {"role", "user"}};
  EXPECT_EQ(run("{{ .Role }} {{ range .ToolCalls }}{{ .Function.Name }}{{ end }}", data), "user f");
}

TEST(GoTemplate, IfElseIfElse) {
  const char* t = "{{ if eq .R \"a\" }}A{{ else if eq .R \"b\" \"c\" }}BC{{ else }}other{{ end }}";
  EXPECT_EQ(run(t, {{"R", "a"}}), "A");
  EXPECT_EQ(run(t, {{"R", "c"}}), "BC");
  EXPECT_EQ(run(t, {{"R", "z"}}), "other");
  EXPECT_EQ(run("{{ if .E }}y{{ else }}n{{ end }}", {{"E", json::array()}}), "n");
  EXPECT_EQ(run("{{ if .E }}y{{ else }}n{{ end }}", {{"E", ""}}), "n");
  EXPECT_EQ(run("{{ if .E }}y{{ else }}n{{ end }}", {{"E", 0.5}}), "y");
}

TEST(GoTemplate, RangeWithIndexElseBreakAndContinue) {
  const json data = {
      {"L", {"a", "b", "c", "d"}}, {"M", {{"z", 1}, {"y", 2}}}, {"E", json::array()}};
  EXPECT_EQ(run("{{ range $i, $v := .L }}{{ $i }}={{ $v }};{{ end }}", data), "0=a;1=b;2=c;3=d;");
  EXPECT_EQ(run("{{ range .L }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ if eq . \"d\" }}{{ "
                "break }}{{ end }}{{ . }}{{ end }}",
                data),
            "ac");
  EXPECT_EQ(run("{{ range $k, $v := .M }}{{ $k }}{{ $v }}{{ end }}", data), "y2z1");  // sorted keys
  EXPECT_EQ(run("{{ range .E }}x{{ else }}empty{{ end }}", data), "empty");
  EXPECT_EQ(run("{{ range $i := 3 }}{{ $i }}{{ end }}", data), "012");
  EXPECT_EQ(run("{{ range .L }}{{ $.L | len }}{{ end }}", data), "4444");
}

TEST(GoTemplate, WithAndVariables) {
  const json data = {{"U", {{"Name", "Bo"}}}, {"N", nullptr}};
  EXPECT_EQ(run("{{ with .U }}{{ .Name }}{{ end }}{{ with .N }}x{{ else }}none{{ end }}", data),
            "Bonone");
  EXPECT_EQ(run("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", data), "2");
  EXPECT_EQ(run("{{ with $n := .U.Name }}{{ $n }}{{ . }}{{ end }}", data), "BoBo");
  EXPECT_EQ(parse_error("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}"),
            "template: :1: undefined variable \"$y\"");
  EXPECT_EQ(run("{{ with .N }}{{ else with .U }}{{ .Name }}{{ end }}", data), "Bo");
}

TEST(GoTemplate, Functions) {
  const json data = {{"L", {"a", "b", "c"}},
                     {"S", "hello"},
                     {"M", {{"k", "v"}}},
                     {"N", 2},
                     {"Args", {{"city", "Paris"}, {"days", 2}}}};
  EXPECT_EQ(
      run("{{ len .L }} {{ len .S }} {{ len .M }} {{ index .L 1 }} {{ index .M \"k\" }}", data),
      "3 5 1 b v");
  EXPECT_EQ(run("{{ slice .L 1 }} {{ slice .S 1 3 }} {{ len (slice .L 2) }}", data),
            R"(["b","c"] el 1)");
  EXPECT_EQ(run("{{ and 1 0 }} {{ or 0 \"\" \"x\" }} {{ not .L }} {{ and .S .N }}", data),
            "0 x false 2");
  // and/or stop at the deciding argument, so the failing index is never evaluated.
  EXPECT_EQ(run("{{ and .Missing (index .L 9) }}|{{ or .S (index .L 9) }}", data), "|hello");
  EXPECT_EQ(
      run("{{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1 2 }} {{ ne .S \"x\" }}", data),
      "true true true false true");
  EXPECT_EQ(run("{{ json .Args }} {{ json .S }}", data), R"({"city":"Paris","days":2} "hello")");
  EXPECT_EQ(run("{{ print \"a\" 1 2 \"b\" }} {{ printf \"%s=%d %q %5.2f|%-3s|\" .S .N .S 3.14159 "
                "\"x\" }}",
                data),
            "a1 2b hello=2 \"hello\"  3.14|x  |");
  EXPECT_EQ(run("{{ .S | printf \"<%s>\" }} {{ .L | len | printf \"%d items\" }}", data),
            "<hello> 3 items");
  EXPECT_EQ(run("{{ (index .L 0) }}{{ (index .M \"k\") | len }}", data), "a1");
  EXPECT_EQ(run("{{ toTypeScriptType .P }}", {{"P", {{"type", {"string", "null"}}}}}),
            "string | null");
  EXPECT_EQ(run("{{ currentDate }}").size(), 10u);
}

TEST(GoTemplate, ParseErrors) {
  EXPECT_EQ(parse_error("{{ if .X }}open"), "template: :1: unexpected EOF");
  EXPECT_EQ(parse_error("a\n{{ end }}"), "template: :2: unexpected {{end}}");
  EXPECT_EQ(parse_error("{{ else }}"), "template: :1: unexpected {{else}}");
  EXPECT_EQ(parse_error("{{ upper .X }}"), "template: :1: function \"upper\" not defined");
  EXPECT_EQ(parse_error("{{ $x }}"), "template: :1: undefined variable \"$x\"");
  EXPECT_EQ(parse_error("x\n\n{{ .X "), "template: :3: unclosed action");
  EXPECT_EQ(parse_error("{{ template \"t\" }}"),
            "template: :1: {{template}} is not supported in Ollama templates");
  EXPECT_EQ(parse_error("{{ break }}"), "template: :1: {{break}} outside {{range}}");
  EXPECT_EQ(parse_error("{{/* open"), "template: :1: unclosed comment");
  EXPECT_EQ(parse_error("{{ \"abc }}"), "template: :1: unterminated quoted string");
  EXPECT_EQ(parse_error("{{ }}"), "template: :1: missing value for command");
  EXPECT_EQ(parse_error("{{ if }}{{ end }}"), "template: :1: missing value for if");
  EXPECT_EQ(parse_error("{{ (.X }}"), "template: :1: unclosed left paren");
  EXPECT_EQ(parse_error("{{ .X ) }}"), "template: :1: unexpected right paren");
}

TEST(GoTemplate, RunTimeErrorsNameTheLine) {
  EXPECT_EQ(run_error("\n{{ index .L 5 }}", {{"L", {1}}}),
            "template: :2: executing: error calling index: index out of range: 5");
  EXPECT_EQ(run_error("{{ .S.Field }}", {{"S", "text"}}),
            "template: :1: executing: can't evaluate field Field in type string");
  EXPECT_EQ(run_error("{{ .S 1 }}", {{"S", "text"}}),
            "template: :1: executing: can't give argument to non-function .S");
  EXPECT_EQ(run_error("{{ lt .S 1 }}", {{"S", "text"}}),
            "template: :1: executing: error calling lt: incompatible types for comparison");
}

// ChatML with tools and thinking, in the style of Ollama's Qwen templates (written here).
constexpr const char* kChatMl =
    R"TPL({{- /* ChatML, tools and thinking: a hostlm test template */ -}}
{{- if or .System .Tools }}<|im_start|>system
{{- if .System }}
{{ .System }}
{{- end }}
{{- if .Tools }}

# Tools
<tools>
{{- range .Tools }}
{{ json . }}
{{- end }}
</tools>
{{- end }}<|im_end|>
{{ end }}
{{- range $i, $m := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if eq $m.Role "user" }}<|im_start|>user
{{ $m.Content }}<|im_end|>
{{ else if eq $m.Role "assistant" }}<|im_start|>assistant
{{- if and $.Think $m.Thinking }}
<think>
{{ $m.Thinking }}
</think>
{{- end }}
{{- if $m.Content }}
{{ $m.Content }}
{{- end }}
{{- range $m.ToolCalls }}
<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>
{{- end }}
{{- if not $last }}<|im_end|>
{{ end }}
{{- else if eq $m.Role "tool" }}<|im_start|>user
<tool_response>
{{ $m.Content }}
</tool_response><|im_end|>
{{ end }}
{{- if and (ne $m.Role "assistant") $last }}<|im_start|>assistant
{{ if and $.IsThinkSet (not $.Think) }}<think>

</think>

{{ end }}
{{- end }}
{{- end }})TPL";

const json kTools = json::parse(R"([{"type":"function","function":{"name":"get_weather",
  "description":"Current weather","parameters":{"type":"object","required":["city"],
  "properties":{"unit":{"type":"string","enum":["c","f"]},"city":{"description":"City name","type":"string"}}}}}])");

const json kConversation = json::parse(R"([
  {"role":"system","content":"Be brief."},
  {"role":"user","content":"Weather in Paris?"},
  {"role":"assistant","content":"","thinking":"Need the tool.",
   "tool_calls":[{"function":{"name":"get_weather","arguments":{"unit":"c","city":"Paris"}}}]},
  {"role":"tool","content":"18 C","tool_name":"get_weather"}])");

TEST(GoTemplateChat, ChatMlWithToolsThinkingOff) {
  const GoTemplate t = GoTemplate::parse(kChatMl);
  EXPECT_TRUE(t.references("Tools"));
  EXPECT_TRUE(t.references("messages"));
  EXPECT_FALSE(t.references("Suffix"));
  EXPECT_EQ(
      t.render_chat(kConversation, kTools, false),
      "<|im_start|>system\nBe brief.\n\n# Tools\n<tools>\n"
      R"({"type":"function","function":{"name":"get_weather","description":"Current weather",)"
      R"("parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string",)"
      R"("description":"City name"},"unit":{"type":"string","enum":["c","f"]}}}}})"
      "\n</tools><|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n"
      R"({"name": "get_weather", "arguments": {"city":"Paris","unit":"c"}})"
      "\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(GoTemplateChat, ThinkingOnKeepsReasoningAndMergesSameRoleMessages) {
  const GoTemplate t = GoTemplate::parse(kChatMl);
  const json msgs = json::parse(R"([{"role":"user","content":"a"},{"role":"user","content":"b"},
    {"role":"assistant","content":"c","thinking":"t"},{"role":"user","content":"d"}])");
  EXPECT_EQ(t.render_chat(msgs, nullptr, "high"),
            "<|im_start|>user\na\n\nb<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nt\n</think>\nc<|im_end|>\n"
            "<|im_start|>user\nd<|im_end|>\n<|im_start|>assistant\n");
  // Think not set: no empty think block; a final assistant message is a prefill.
  const json prefill =
      json::parse(R"([{"role":"user","content":"q"},{"role":"assistant","content":"The"}])");
  EXPECT_EQ(t.render_chat(prefill, nullptr),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nThe");
}

// A template without .Messages runs once per turn and the last run stops after .Response.
TEST(GoTemplateChat, LegacyModeRunsPerTurnAndCutsAfterResponse) {
  const GoTemplate t = GoTemplate::parse(
      "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}"
      "{{ if .Prompt }}<|im_start|>user\n{{ .Prompt }}<|im_end|>\n{{ end }}"
      "<|im_start|>assistant\n{{ .Response }}<|im_end|>\n");
  const json msgs = json::parse(R"([{"role":"system","content":"S"},{"role":"user","content":"u1"},
    {"role":"assistant","content":"a1"},{"role":"user","content":"u2"}])");
  EXPECT_EQ(t.render_chat(msgs, nullptr),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nu1<|im_end|>\n"
            "<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nu2<|im_end|>\n<|im_start|>assistant\n");
  // {{ .Response }} is appended to a template that uses neither Messages nor Response.
  const GoTemplate plain = GoTemplate::parse("Q: {{ .Prompt }} A: ");
  EXPECT_EQ(plain.render_chat(json::parse(R"([{"role":"user","content":"hi"}])"), nullptr),
            "Q: hi A: ");
  EXPECT_EQ(plain.execute({{"Prompt", "x"}, {"Response", "y"}}), "Q: x A: y");
  EXPECT_EQ(GoTemplate::parse("{{ .Prompt }}<fim>{{ .Suffix }}").render_generate("a", "b"),
            "a<fim>b");
}

}  // namespace
}  // namespace hostlm::ollama

namespace hostlm::ollama {
namespace {

// TEMPLATEs come in requests (/api/create): deep nesting is a parse error, not a stack
// overflow when parsing, running or freeing the template.
TEST(GoTemplate, DeepNestingIsAParseError) {
  const auto ifs = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "{{if 1}}";
    s += "x";
    for (int i = 0; i < n; ++i) s += "{{end}}";
    return s;
  };
  EXPECT_EQ(run(ifs(100)), "x");
  EXPECT_EQ(parse_error(ifs(300)), "template: :1: nested deeper than 256 levels");
  EXPECT_EQ(parse_error(ifs(100000)), "template: :1: nested deeper than 256 levels");
  std::string chain = "{{if 0}}a";
  for (int i = 0; i < 1000; ++i) chain += "{{else if 0}}a";
  EXPECT_EQ(parse_error(chain + "{{end}}"), "template: :1: nested deeper than 256 levels");
  const auto parens = [](int n) {
    return "{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}";
  };
  EXPECT_EQ(run(parens(100)), "1");
  EXPECT_EQ(parse_error(parens(100000)), "template: :1: nested deeper than 256 levels");
}

// printf widths as Go's fmt takes them: past a million the number is garbage and the verb is
// lost (once an int overflow). What a template writes is bounded.
TEST(GoTemplate, HugePrintfWidthsAndOutputAreBounded) {
  EXPECT_EQ(run(R"({{ printf "%5d|%-4s|%.2s" 42 "ab" "xyz" }})"), "   42|ab  |xy");
  EXPECT_EQ(run(R"({{ printf "%777777777777777777777d" 1 }})"), "%!(NOVERB)%!(EXTRA int=1)");
  EXPECT_EQ(run(R"({{ printf "%.99999999999s" "x" }})"), "%!(NOVERB)%!(EXTRA string=x)");
  EXPECT_EQ(run(R"({{ printf "%1000000d" 1 }})").size(), 1000000u);
  std::string wide;
  for (int i = 0; i < 70; ++i) wide += R"({{ printf "%1000000d" 1 }})";
  EXPECT_EQ(run_error(wide, json::object()), "template: :1: executing: output exceeds 64 MiB");
}

// Found by the fuzzer in CI: a float index past int64's range was converted (undefined).
TEST(GoTemplate, HugeFloatIndexIsAnError) {
  const json data = json::parse(R"({"Messages": ["a", "b"]})");
  EXPECT_EQ(run("{{ index .Messages 1.0 }}", data), "b");
  EXPECT_NE(run_error("{{ index .Messages 999999999999999999999999999.9 }}", data)
                .find("cannot index slice/array with type float64"),
            std::string::npos);
}

}  // namespace
}  // namespace hostlm::ollama
