// The `hostlm` binary as users and outside checks run it: render-chat byte for byte against
// the reference renders, run --prompt and the interactive chat on the tiny model, the
// token-id form unchanged, and clear failures.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace hostlm {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

fs::path env_path(const char* name) {
  const char* value = std::getenv(name);
  return value ? fs::path(value) : fs::path();
}

fs::path source_dir() { return env_path("HOSTLM_SOURCE_DIR"); }

// ${HOSTLM_BUILD_DIR}/bin/hostlm; without that variable (ctest passes only the first entry of
// HOSTLM_TEST_ENV), the hostlm built beside this test.
fs::path hostlm_binary() {
  const fs::path build = env_path("HOSTLM_BUILD_DIR");
  if (!build.empty()) return build / "bin" / "hostlm";
  return fs::read_symlink("/proc/self/exe").parent_path() / "hostlm";
}
fs::path tiny_model() { return source_dir() / "tests" / "data" / "models" / "tiny-tied-f32"; }

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class Scratch {
 public:
  Scratch() {
    dir_ = fs::temp_directory_path() / ("hostlm-cli-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

const Scratch& scratch() {
  static const Scratch s;
  return s;
}

struct Result {
  int status = -1;
  std::string out, err;
};

// Runs `hostlm ARGS` through the shell; `input` is its standard input.
Result hostlm(const std::string& args, const std::string& input = "") {
  const fs::path err = scratch().dir() / "stderr.txt";
  const fs::path in = scratch().write("stdin.txt", input);
  const std::string command = quoted(hostlm_binary().string()) + " " + args + " <" +
                              quoted(in.string()) + " 2>" + quoted(err.string());
  Result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err);
  return r;
}

std::vector<Json> reference_cases() {
  std::ifstream in(source_dir() / "tests" / "data" / "chat" / "qwen35_cases.json");
  return Json::parse(in).at("cases").get<std::vector<Json>>();
}

// The render-chat arguments for a reference case, its messages and tools written to files.
std::string render_args(const Json& c) {
  std::string args =
      " --messages " + quoted(scratch().write("messages.json", c.at("messages").dump()).string());
  if (c.contains("tools"))
    args += " --tools " + quoted(scratch().write("tools.json", c["tools"].dump()).string());
  const Json& o = c.at("options");
  if (o.contains("enable_thinking"))
    args += o["enable_thinking"].get<bool>() ? " --think on" : " --think off";
  if (!o.at("add_generation_prompt").get<bool>()) args += " --no-generation-prompt";
  return args;
}

std::string ids_text(const std::string& json_line) {
  std::string s = json_line;
  s.erase(
      std::remove_if(s.begin(), s.end(), [](char c) { return c == '[' || c == ']' || c == '\n'; }),
      s.end());
  return s;
}

// "prompt: N tokens, M reused: [ids]" lines that `run -v` writes to stderr, as "1,2,3".
std::vector<std::string> verbose_prompts(const std::string& err) {
  std::vector<std::string> prompts;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("prompt: ")) continue;
    prompts.push_back(ids_text(line.substr(line.find('['))));
  }
  return prompts;
}

// ---- render-chat ------------------------------------------------------------------------------

TEST(RenderChat, ArchFormMatchesEveryReferenceCase) {
  int checked = 0;
  for (const Json& c : reference_cases()) {
    if (c.at("variant") != "default") continue;  // the other template needs a model carrying it
    SCOPED_TRACE(c.at("name").get<std::string>());
    const Result r = hostlm("render-chat --arch qwen35" + render_args(c));
    if (c.contains("error")) {
      EXPECT_NE(r.status, 0);
      EXPECT_TRUE(r.out.empty()) << r.out;
      EXPECT_NE(r.err.find("hostlm: "), std::string::npos) << r.err;
      if (c.at("error_type") == "TemplateError") {
        EXPECT_NE(r.err.find(c["error"].get<std::string>()), std::string::npos) << r.err;
      }
      continue;
    }
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c.at("prompt").get<std::string>());
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST(RenderChat, ModelFormMatchesTheReference) {
  // The tiny model carries the real template (thinking on by default): the "default" cases.
  for (const Json& c : reference_cases()) {
    const std::string name = c.at("name").get<std::string>();
    if (name != "multi_turn" && name != "tools_with_system" && name != "user_only_thinking_off")
      continue;
    SCOPED_TRACE(name);
    const Result r = hostlm("render-chat " + quoted(tiny_model().string()) + render_args(c));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c.at("prompt").get<std::string>());
  }
}

TEST(RenderChat, GgufModelForm) {
  const fs::path gguf = scratch().dir() / "tiny.gguf";
  const Result converted = hostlm("convert " + quoted(tiny_model().string()) + " " +
                                  quoted(gguf.string()) + " --type f32");
  ASSERT_EQ(converted.status, 0) << converted.err;
  for (const Json& c : reference_cases()) {
    if (c.at("name") != "agentic_turn_tool_results_grouped") continue;
    const Result r = hostlm("render-chat " + quoted(gguf.string()) + render_args(c));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c.at("prompt").get<std::string>());
  }
}

TEST(RenderChat, OneFileWithMessagesAndTools) {
  for (const Json& c : reference_cases()) {
    if (c.at("name") != "tools_no_system") continue;
    const Json both = {{"messages", c["messages"]}, {"tools", c["tools"]}};
    const Result r = hostlm("render-chat --arch qwen35 --messages " +
                            quoted(scratch().write("both.json", both.dump()).string()));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c.at("prompt").get<std::string>());
  }
}

TEST(RenderChat, FailuresAreClear) {
  const std::string ok =
      quoted(scratch().write("ok.json", R"([{"role":"user","content":"hi"}])").string());
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {"--arch qwen35", "--messages is required"},
      {"--messages " + ok, "--arch"},  // neither MODEL nor --arch
      {"--arch nosuch --messages " + ok, "nosuch"},
      {"/no/such/model --messages " + ok, "/no/such/model"},
      {"--arch qwen35 --messages /no/such.json", "/no/such.json: cannot open"},
      {"--arch qwen35 --messages " + quoted(scratch().write("bad.json", "[{").string()),
       "not valid JSON"},
      {"--arch qwen35 --think maybe --messages " + ok, "--think"},
      {"--arch qwen35 --messages " + quoted(scratch()
                                                .write("image.json", R"([{"role":"user","content":[
                          {"type":"image_url","image_url":{"url":"x"}}]}])")
                                                .string()),
       "images are not supported yet"},
  };
  for (const Case& c : cases) {
    const Result r = hostlm("render-chat " + c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args << ": " << r.out;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.args << ": " << r.err;
  }
}

// ---- run ---------------------------------------------------------------------------------------

TEST(Run, TokenFormIsUnchanged) {
  const Result r = hostlm("run --tokens 1,17,42,1999,5,5,300 -n 16 --temp 0");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "300,300,300,300,300,300,300,1576,1576,1576,1576,1576,1576,1576,1576,1576\n");
}

TEST(Run, PromptIsDeterministicAtTemperatureZero) {
  const std::string args =
      "run " + quoted(tiny_model().string()) + " --prompt 'Hello there' --temp 0 -n 8";
  const Result a = hostlm(args);
  const Result b = hostlm(args);
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.find('\x1b'), std::string::npos) << "escape codes in a pipe";
  // Hidden thinking: only the answer, which for 8 tokens of a thinking model is nothing.
  const Result hidden = hostlm(args + " --hide-thinking");
  EXPECT_EQ(hidden.status, 0) << hidden.err;
  EXPECT_LT(hidden.out.size(), a.out.size());
}

// --n-cpu-moe and --cpu-moe are accepted and change nothing on the CPU backend.
TEST(Run, CpuMoeFlagsChangeNothingOnTheCpu) {
  const std::string args = "run --tokens 1,17,42 -n 4 --temp 0 --backend cpu";
  const Result plain = hostlm(args);
  EXPECT_EQ(plain.status, 0) << plain.err;
  for (const std::string flag : {" --n-cpu-moe 2", " --cpu-moe", " --ncmoe 1"}) {
    const Result r = hostlm(args + flag);
    EXPECT_EQ(r.status, 0) << flag << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << flag;
  }
}

// --state-type f16 / bf16 runs with 16-bit recurrent states; greedy decoding of the tiny model
// gives the f32 run's tokens (its margins are far wider than the rounding).
TEST(Run, SixteenBitStatesGiveTheSameGreedyTokens) {
  const std::string args = "run --tokens 1,17,42 -n 8 --temp 0 --backend cpu";
  const Result plain = hostlm(args);
  EXPECT_EQ(plain.status, 0) << plain.err;
  for (const std::string type : {"f32", "f16", "bf16"}) {
    const Result r = hostlm(args + " --state-type " + type);
    EXPECT_EQ(r.status, 0) << type << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << type;
  }
}

TEST(Run, PromptTokensAreTheRenderedChatTokenized) {
  const std::string model = quoted(tiny_model().string());
  for (const std::string think : {"on", "off"}) {
    SCOPED_TRACE(think);
    const fs::path messages = scratch().write(
        "m.json",
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi, you!"}])");
    const Result rendered = hostlm("render-chat " + model + " --think " + think + " --messages " +
                                   quoted(messages.string()));
    ASSERT_EQ(rendered.status, 0) << rendered.err;
    const Result tokens = hostlm("tokenize " + model + " --file " +
                                 quoted(scratch().write("p.txt", rendered.out).string()));
    ASSERT_EQ(tokens.status, 0) << tokens.err;
    const Result run =
        hostlm("run " + model + " --system 'Be brief.' --prompt 'Hi, you!' -n 0 -v --" +
               std::string(think == "on" ? "think" : "no-think"));
    ASSERT_EQ(run.status, 0) << run.err;
    const auto prompts = verbose_prompts(run.err);
    ASSERT_EQ(prompts.size(), 1u) << run.err;
    EXPECT_EQ(prompts[0], ids_text(tokens.out));
  }
}

TEST(Run, SpecialTokenTextInAMessageIsPlainText) {
  const std::string model = quoted(tiny_model().string());
  const Result run = hostlm("run " + model + " --prompt 'a<|im_end|>b<|im_start|>' -n 0 -v");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto prompts = verbose_prompts(run.err);
  ASSERT_EQ(prompts.size(), 1u) << run.err;
  // <|im_start|> = 2023, <|im_end|> = 2024 in the tiny tokenizer: only the template's own.
  std::vector<std::string> ids;
  std::istringstream list(prompts[0]);
  for (std::string id; std::getline(list, id, ',');) ids.push_back(id);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "2023"), 2) << prompts[0];
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "2024"), 1) << prompts[0];
  // The user's text is there as plain text.
  const Result plain =
      hostlm("tokenize " + model + " --no-special --text 'a<|im_end|>b<|im_start|>'");
  EXPECT_NE(prompts[0].find(ids_text(plain.out)), std::string::npos) << prompts[0];
}

TEST(Run, InteractiveChatThroughAPipe) {
  const Result r =
      hostlm("run " + quoted(tiny_model().string()) + " --temp 0 -n 8", "hello\n/bye\n");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  // End of input without /bye is a normal exit too.
  EXPECT_EQ(hostlm("run " + quoted(tiny_model().string()) + " -n 2", "hi\n").status, 0);
  EXPECT_EQ(hostlm("run " + quoted(tiny_model().string()), "").status, 0);
}

TEST(Run, InteractiveCommandsHistoryAndMultiLine) {
  const std::string model = quoted(tiny_model().string());
  const std::string input =
      "/?\n"
      "/set nothink\n"
      "/set parameter temperature 0\n"
      "/set parameter num_predict 4\n"
      "/set parameter top_k x\n"
      "/set system Be brief.\n"
      "\"\"\"\nline one\nline two\n\"\"\"\n"
      "again\n"
      "/clear\n"
      "/nonsense\n"
      "fresh\n"
      "/bye\n"
      "never read\n";
  const Result r = hostlm("run " + model + " -v", input);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("/set think"), std::string::npos) << "help";
  EXPECT_NE(r.err.find("Set 'nothink' mode."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Invalid value 'x' for top_k."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Unknown command '/nonsense'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generated 4 tokens"), std::string::npos) << r.err;
  const auto prompts = verbose_prompts(r.err);
  ASSERT_EQ(prompts.size(), 3u) << r.err;

  // The first turn is the multi-line message, without thinking, under the system message.
  const fs::path first = scratch().write(
      "first.json",
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"line one\nline two"}])");
  const Result rendered =
      hostlm("render-chat " + model + " --think off --messages " + quoted(first.string()));
  const Result tokens = hostlm("tokenize " + model + " --file " +
                               quoted(scratch().write("f.txt", rendered.out).string()));
  EXPECT_EQ(prompts[0], ids_text(tokens.out));
  // The second carries the first exchange; after /clear the third starts over.
  EXPECT_GT(prompts[1].size(), prompts[0].size());
  const fs::path third = scratch().write(
      "third.json",
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"fresh"}])");
  const Result rendered3 =
      hostlm("render-chat " + model + " --think off --messages " + quoted(third.string()));
  const Result tokens3 = hostlm("tokenize " + model + " --file " +
                                quoted(scratch().write("t.txt", rendered3.out).string()));
  EXPECT_EQ(prompts[2], ids_text(tokens3.out));
}

TEST(Run, FailuresAreClear) {
  const std::string model = quoted(tiny_model().string());
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {"run /no/such/model --prompt hi", "/no/such/model"},
      {"run " + model + " --prompt hi --bogus", "--bogus"},
      {"run " + model + " --prompt hi --tokens 1", "excludes"},
      {"run " + model + " --prompt hi --think --no-think", "excludes"},
      {"run " + model + " --prompt hi --min-p 2", "--min-p"},
      {"run " + model + " --prompt hi --repeat-penalty 0", "--repeat-penalty"},
      {"run " + model + " --prompt hi -n -3", "-n"},
      {"run " + model + " --tokens 1,x", "'x' is not a token id"},
      {"run " + model + " --prompt hi --n-cpu-moe -2", "--n-cpu-moe"},
      {"run " + model + " --prompt hi --state-type q8_0", "--state-type"},
  };
  for (const Case& c : cases) {
    const Result r = hostlm(c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.args << ": " << r.err;
  }
}

// ---- run --format / --grammar ----------------------------------------------------------------

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

TEST(Run, FormatSchemaAnswersAreValidJson) {
  const fs::path schema = scratch().write("person.schema.json", R"({"type":"object",
    "properties":{"name":{"type":"string","maxLength":12},
    "age":{"type":"integer","minimum":0,"maximum":120}},
    "required":["name","age"],"additionalProperties":false})");
  for (int seed = 0; seed < 3; ++seed) {
    const Result r = hostlm("run " + quoted(tiny_model().string()) +
                            " --prompt 'a person' --temp 1 -n 200 --seed " + std::to_string(seed) +
                            " --format " + quoted(schema.string()));
    ASSERT_EQ(r.status, 0) << r.err;
    Json j;
    ASSERT_NO_THROW(j = Json::parse(trimmed(r.out))) << r.out;
    EXPECT_TRUE(j.at("name").is_string()) << r.out;
    EXPECT_TRUE(j.at("age").is_number_integer()) << r.out;
  }
}

TEST(Run, FormatJsonAndGrammarFile) {
  const Result json =
      hostlm("run " + quoted(tiny_model().string()) + " --prompt hi --temp 0 -n 300 --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  // -n may cut a long object short; what was printed is still the start of one.
  const size_t first = json.out.find_first_not_of(" \t\r\n");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(json.out[first], '{') << json.out;
  const fs::path gbnf = scratch().write("yesno.gbnf", "root ::= \"yes\" | \"no\"\n");
  const Result yes_no = hostlm("run " + quoted(tiny_model().string()) +
                               " --prompt hi --temp 1 --grammar " + quoted(gbnf.string()));
  ASSERT_EQ(yes_no.status, 0) << yes_no.err;
  const std::string answer = trimmed(yes_no.out);
  EXPECT_TRUE(answer == "yes" || answer == "no") << yes_no.out;
}

TEST(Run, FormatAndGrammarFailuresAreClear) {
  const std::string model = quoted(tiny_model().string());
  const fs::path bad_gbnf = scratch().write("bad.gbnf", "root ::= \"unclosed\n");
  const fs::path bad_schema = scratch().write("bad.schema.json", R"({"type":"bogus"})");
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {"run " + model + " --prompt hi --format /no/such.schema.json", "/no/such.schema.json"},
      {"run " + model + " --prompt hi --format " + quoted(bad_schema.string()), "--format"},
      {"run " + model + " --prompt hi --grammar " + quoted(bad_gbnf.string()), "--grammar"},
      {"run " + model + " --prompt hi --grammar /no/such.gbnf", "/no/such.gbnf"},
      {"run " + model + " --tokens 1 --format json", "excludes"},
  };
  for (const Case& c : cases) {
    const Result r = hostlm(c.args);
    EXPECT_NE(r.status, 0) << c.args;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace hostlm

namespace hostlm {
namespace {

TEST(Version, NamesVersionCommitAndBackends) {
  const Result r = hostlm("version --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j.at("version").get<std::string>().empty());
  EXPECT_FALSE(j.at("commit").get<std::string>().empty());
  // The commit is stamped at build time, not when the build was configured: built from a git
  // checkout, it is the checkout's HEAD (the tests run after the build).
  const std::string git =
      "git -C " + quoted(source_dir().string()) + " rev-parse --short=12 HEAD 2>/dev/null";
  if (FILE* pipe = ::popen(git.c_str(), "r")) {
    char head[64] = {};
    const bool got = std::fgets(head, sizeof head, pipe) != nullptr;
    if (::pclose(pipe) == 0 && got) {
      std::string want(head);
      want.erase(want.find_last_not_of("\n") + 1);
      EXPECT_EQ(j.at("commit").get<std::string>().rfind(want, 0), 0u)
          << "commit " << j.at("commit") << ", HEAD " << want;
    }
  }
  EXPECT_EQ(j.at("backends").at("cpu"), "available");
  // Without a GPU the CUDA entry must say why it cannot be used.
  EXPECT_TRUE(j.at("backends").contains("cuda"));
}

}  // namespace
}  // namespace hostlm
