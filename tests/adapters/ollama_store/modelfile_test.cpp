// Modelfile parsing (spec 1.1-1.4) on the documented examples and on malformed files, the
// create request it turns into, and the Modelfile written back for a stored model (1.5).
#include "hostlm/ollama/modelfile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hostlm/ollama/errors.h"

namespace hostlm::ollama {
namespace {

namespace fs = std::filesystem;

std::string error_of(std::string_view text) {
  try {
    parse_modelfile(text);
  } catch (const RequestError& e) {
    EXPECT_EQ(e.kind(), RequestError::Kind::kBadRequest);
    return e.what();
  }
  return "(no error)";
}

TEST(Modelfile, ParsesTheQwenGgufExampleOfTheSpec) {
  const Modelfile mf = parse_modelfile(
      "# a second FROM path becomes the projector layer (vision); note that '#' after an\n"
      "# argument would be part of the argument, so comments go on their own lines\n"
      "FROM ./Qwen3.5-9B-Q4_K_M.gguf\n"
      "FROM ./mmproj-Qwen3.5-9B-F16.gguf\n"
      "RENDERER qwen3.5\n"
      "PARSER qwen3.5\n"
      "PARAMETER num_ctx 32768\n"
      "PARAMETER temperature 1\n"
      "PARAMETER top_k 20\n"
      "PARAMETER top_p 0.95\n"
      "PARAMETER presence_penalty 1.5\n"
      "PARAMETER stop \"<|im_end|>\"\n"
      "SYSTEM \"\"\"You are a helpful assistant.\"\"\"\n");
  ASSERT_EQ(mf.commands.size(), 11u);
  EXPECT_EQ(mf.commands[0].name, "from");
  EXPECT_EQ(mf.commands[0].args, "./Qwen3.5-9B-Q4_K_M.gguf");
  EXPECT_EQ(mf.commands[0].line, 3);
  EXPECT_EQ(mf.commands[2].name, "renderer");
  EXPECT_EQ(mf.commands[2].args, "qwen3.5");
  EXPECT_EQ(mf.commands[4].name, "parameter");
  EXPECT_EQ(mf.commands[4].key, "num_ctx");
  EXPECT_EQ(mf.commands[4].args, "32768");
  EXPECT_EQ(mf.commands[9].args, "<|im_end|>");
  EXPECT_EQ(mf.commands[10].name, "system");
  EXPECT_EQ(mf.commands[10].args, "You are a helpful assistant.");
  EXPECT_EQ(mf.commands[10].line, 13);
  EXPECT_TRUE(mf.warnings.empty());
}

// The example of Ollama's docs/modelfile.mdx (Mario), with its instructions in mixed case.
TEST(Modelfile, ParsesTheDocumentedMarioExampleCaseInsensitively) {
  const Modelfile mf = parse_modelfile(
      "FROM llama3.2\n"
      "# sets the temperature to 1 [higher is more creative, lower is more coherent]\n"
      "PARAMETER temperature 1\n"
      "# sets the context window size to 4096, this controls how many tokens the LLM can use as "
      "context to generate the next token\n"
      "parameter num_ctx 4096\n"
      "\n"
      "# sets a custom system message to specify the behavior of the chat assistant\n"
      "System You are Mario from super mario bros, acting as an assistant.\n"
      "MESSAGE user Is Toronto in Canada?\n"
      "MESSAGE assistant yes\n");
  ASSERT_EQ(mf.commands.size(), 6u);
  EXPECT_EQ(mf.commands[2].key, "num_ctx");
  EXPECT_EQ(mf.commands[3].name, "system");
  EXPECT_EQ(mf.commands[3].args, "You are Mario from super mario bros, acting as an assistant.");
  EXPECT_EQ(mf.commands[4].name, "message");
  EXPECT_EQ(mf.commands[4].key, "user");
  EXPECT_EQ(mf.commands[4].args, "Is Toronto in Canada?");
  const CreateRequest req = to_create_request(mf, fs::temp_directory_path());
  EXPECT_EQ(req.from, "llama3.2");
  EXPECT_EQ(req.parameters["temperature"], 1.0);
  EXPECT_EQ(req.parameters["num_ctx"], 4096);
  ASSERT_TRUE(req.messages);
  EXPECT_EQ(
      req.messages->dump(),
      R"([{"role":"user","content":"Is Toronto in Canada?"},{"role":"assistant","content":"yes"}])");
}

TEST(Modelfile, KeepsTripleQuotedTextVerbatimAndHashesInsideArguments) {
  const Modelfile mf = parse_modelfile(
      "\xEF\xBB\xBF"  // UTF-8 byte-order mark
      "FROM base # not a comment\r\n"
      "TEMPLATE \"\"\"{{ if .System }}<|im_start|>system\n"
      "{{ .System }}<|im_end|>\n"
      "{{ end }}  \"\"\"\n"
      "SYSTEM \"two\n"
      "lines\"\n"
      "LICENSE MIT\n"
      "LICENSE Apache 2.0\n");
  ASSERT_EQ(mf.commands.size(), 5u);
  EXPECT_EQ(mf.commands[0].args, "base # not a comment");
  EXPECT_EQ(mf.commands[1].args,
            "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}  ");
  EXPECT_EQ(mf.commands[1].line, 2);
  EXPECT_EQ(mf.commands[2].args, "two\nlines");
  EXPECT_EQ(mf.commands[3].line, 7);
  const CreateRequest req = to_create_request(mf, ".");
  EXPECT_EQ(req.license, (std::vector<std::string>{"MIT", "Apache 2.0"}));
}

TEST(Modelfile, AcceptsUtf16WithByteOrderMark) {
  const std::string utf8 = "FROM qwen3.5\nSYSTEM h\xC3\xA9llo\n";
  std::string utf16 = "\xFF\xFE";
  for (char c : std::string("FROM qwen3.5\nSYSTEM h")) utf16 += std::string{c, '\0'};
  utf16 += std::string("\xE9\0", 2);
  for (char c : std::string("llo\n")) utf16 += std::string{c, '\0'};
  const Modelfile mf = parse_modelfile(utf16);
  ASSERT_EQ(mf.commands.size(), 2u);
  EXPECT_EQ(mf.commands[1].args, "h\xC3\xA9llo");
}

TEST(Modelfile, LaterInstructionsReplaceAndStopAccumulates) {
  const Modelfile mf = parse_modelfile(
      "FROM a\nSYSTEM one\nSYSTEM two\nPARAMETER stop <|im_end|>\nPARAMETER stop \"</s>\"\n"
      "PARAMETER temperature 0.7\nPARAMETER temperature 0.95\nPARAMETER seed -3\n"
      "PARAMETER use_mmap false\nREQUIRES 0.14.0\nPARAMETER think false\n");
  const CreateRequest req = to_create_request(mf, ".");
  EXPECT_EQ(*req.system, "two");
  EXPECT_EQ(
      req.parameters.dump(),
      R"({"stop":["<|im_end|>","</s>"],"temperature":0.95,"seed":-3,"use_mmap":false,"think":false})");
  EXPECT_EQ(*req.requires_version, "0.14.0");
}

TEST(Modelfile, ReportsOllamasErrorsWithLineNumbers) {
  EXPECT_EQ(error_of("FROM a\nFOO bar\n"),
            "(line 2): command must be one of \"from\", \"license\", \"template\", \"system\", "
            "\"adapter\", \"draft\", \"renderer\", \"parser\", \"parameter\", \"message\", or "
            "\"requires\"");
  EXPECT_EQ(error_of("FROM a\nMESSAGE tool hi\n"),
            "(line 2): message role must be one of \"system\", \"user\", or \"assistant\"");
  EXPECT_EQ(error_of("FROM a\n\nPARAMETER foo 1\n"), "(line 3): unknown parameter 'foo'");
  EXPECT_EQ(error_of("FROM a\nPARAMETER num_ctx big\n"), "(line 2): invalid int value [big]");
  EXPECT_EQ(error_of("FROM a\nPARAMETER top_p x0.5\n"), "(line 2): invalid float value [x0.5]");
  EXPECT_EQ(error_of("FROM a\nPARAMETER use_mmap maybe\n"), "(line 2): invalid bool value [maybe]");
  EXPECT_EQ(error_of("FROM a\nPARAMETER temperature 1e39\n"),
            "(line 2): invalid float value [1e39]");
  EXPECT_EQ(error_of("SYSTEM hello\n"), "no FROM line");
  EXPECT_EQ(error_of(""), "no FROM line");
  EXPECT_EQ(error_of("FROM a\nSYSTEM \"\"\"never closed\n\nmore\n"), "(line 2): unexpected EOF");
  EXPECT_EQ(error_of("FROM a\nSYSTEM \"open\n"), "(line 2): unexpected EOF");
  EXPECT_EQ(error_of("FROM a\nPARAMETER num-ctx 4\n"), "(line 2): unexpected EOF: num");
  EXPECT_EQ(error_of("FROM a\nFROM2 b\n"), error_of("FROM a\nFOO b\n"));
  EXPECT_EQ(error_of("FROM a\nREQUIRES soon\n"),
            "(line 2): requires must be a valid semver (e.g. 0.14.0)");
  EXPECT_EQ(
      error_of("FROM a\nPARAMETER think sometimes\n"),
      "(line 2): invalid think value [sometimes] (expected true, false, low, medium, high or max)");
  EXPECT_EQ(error_of("FROM\n"),
            "(line 1): command must be one of \"from\", \"license\", \"template\", "
            "\"system\", \"adapter\", \"draft\", \"renderer\", \"parser\", "
            "\"parameter\", \"message\", or \"requires\"");
  EXPECT_EQ(error_of("FROM a\nSYSTEM"), "(line 2): unexpected EOF");
}

TEST(Modelfile, DeprecatedParametersWarnAndAreIgnored) {
  const Modelfile mf =
      parse_modelfile("FROM a\nPARAMETER mirostat 2\nPARAMETER penalize_newline x\n");
  ASSERT_EQ(mf.warnings.size(), 2u);
  EXPECT_EQ(mf.warnings[0], "(line 2): parameter mirostat is deprecated");
  EXPECT_TRUE(to_create_request(mf, ".").parameters.empty());
}

TEST(Modelfile, ParameterTypesFollowGo) {
  EXPECT_EQ(parse_parameter("num_predict", "+12"), 12);
  EXPECT_EQ(parse_parameter("top_p", "0.95").dump(), "0.95");  // float32, printed shortest
  EXPECT_EQ(parse_parameter("min_p", ".05").dump(), "0.05");
  EXPECT_EQ(parse_parameter("use_mmap", "T"), true);
  EXPECT_EQ(parse_parameter("stop", "a b"), "a b");
  EXPECT_THROW(parse_parameter("num_ctx", "1.5"), RequestError);
  EXPECT_THROW(parse_parameter("num_ctx", " 4"), RequestError);
  bool deprecated = false;
  EXPECT_TRUE(parse_parameter("low_vram", "whatever", &deprecated).is_null());
  EXPECT_TRUE(deprecated);
}

TEST(Modelfile, RequestOptionsAreTypedAndUnknownOnesIgnored) {
  std::vector<std::string> ignored;
  const auto p = check_parameters(
      nlohmann::json::parse(
          R"({"num_ctx": 4096.0, "temperature": 1, "stop": "x", "mirostat": 1, "tfs_z": 1})"),
      false, &ignored);
  EXPECT_EQ(p.dump(), R"({"num_ctx":4096,"stop":["x"],"temperature":1.0})");
  EXPECT_EQ(ignored, (std::vector<std::string>{"mirostat", "tfs_z"}));
  EXPECT_THROW(check_parameters(nlohmann::json::parse(R"({"tfs_z": 1})"), true), RequestError);
  EXPECT_THROW(check_parameters(nlohmann::json::parse(R"({"num_ctx": "big"})"), false),
               RequestError);
  // Numbers no integer or float32 holds are refused (converting them is undefined behaviour).
  EXPECT_THROW(check_parameters(nlohmann::json::parse(R"({"num_ctx": 1e300})"), false),
               RequestError);
  EXPECT_THROW(check_parameters(nlohmann::json::parse(R"({"temperature": -1e300})"), false),
               RequestError);
}

TEST(Modelfile, PathsResolveAgainstTheModelfileFolderAndHome) {
  const fs::path dir = fs::temp_directory_path() / ("hostlm-mf-" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "w.gguf") << "GGUF";
  const CreateRequest rel = to_create_request(parse_modelfile("FROM ./sub/w.gguf\n"), dir);
  ASSERT_EQ(rel.local_files.size(), 1u);
  EXPECT_EQ(rel.local_files.at("w.gguf"), fs::canonical(dir / "sub" / "w.gguf"));
  EXPECT_TRUE(rel.from.empty());
  const char* old_home = std::getenv("HOME");
  const std::string saved = old_home ? old_home : "";
  ::setenv("HOME", dir.c_str(), 1);
  const CreateRequest home = to_create_request(parse_modelfile("FROM ~/sub/w.gguf\n"), "/");
  ::setenv("HOME", saved.c_str(), 1);
  EXPECT_EQ(home.local_files.at("w.gguf"), fs::canonical(dir / "sub" / "w.gguf"));
  // A folder without weights is an error naming the line.
  fs::create_directories(dir / "empty");
  try {
    to_create_request(parse_modelfile("FROM ./empty\n"), dir);
    ADD_FAILURE() << "no error";
  } catch (const RequestError& e) {
    EXPECT_STREQ(e.what(), "(line 1): no Modelfile or safetensors files found");
  }
  EXPECT_THROW(to_create_request(parse_modelfile("FROM a\nDRAFT ./sub/w.gguf\n"), dir),
               RequestError);
  fs::remove_all(dir);
}

TEST(Modelfile, CreateRequestFromApiJson) {
  const auto req = CreateRequest::from_json(nlohmann::json::parse(R"({
    "model": "m", "files": {"model.gguf": "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    "template": "{{ .Prompt }}", "license": "MIT", "parameters": {"stop": ["a"], "top_k": 3},
    "messages": [{"role": "user", "content": "hi"}], "renderer": "qwen3.5", "stream": false})"));
  EXPECT_EQ(req.files.at("model.gguf"), "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(*req.template_text, "{{ .Prompt }}");
  EXPECT_EQ(req.license, std::vector<std::string>{"MIT"});
  EXPECT_EQ(req.parameters.dump(), R"({"stop":["a"],"top_k":3})");
  EXPECT_EQ(*req.renderer, "qwen3.5");
  auto bad = [](const std::string& body) {
    try {
      CreateRequest::from_json(nlohmann::json::parse(body));
    } catch (const RequestError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(bad(R"({"files": {"../x.gguf": "sha256:)" + std::string(64, 'a') + R"("}})"),
            "file path must be relative");
  EXPECT_EQ(bad(R"({"files": {"x.gguf": "md5:abc"}})"), "invalid digest format");
  EXPECT_EQ(bad(R"({"from": "a", "parameters": {"nope": 1}})"), "unknown parameter 'nope'");
  // A content of another type was nlohmann's type error, a 500 (found by fuzz_api_requests).
  EXPECT_EQ(bad(R"({"from": "a", "messages": [{"role": "user", "content": [1]}]})"),
            "a message's content must be a string");
  EXPECT_EQ(CreateRequest::from_json(
                nlohmann::json::parse(R"({"messages": [{"role": "user", "content": null}]})"))
                .messages->dump(),
            R"([{"role":"user","content":""}])");
}

StoredModel sample_model() {
  StoredModel m;
  m.name = ModelName::parse("qwen3.5:9b");
  m.model_path = "/store/blobs/sha256-" + std::string(64, '1');
  m.template_text = "{{ .Prompt }}";
  m.system = " You are terse.\nVery.";
  m.licenses = {"MIT", "Say \"hi\"\nthen go"};
  m.params = nlohmann::ordered_json::parse(
      R"({"num_ctx":32768,"stop":["<|im_end|>","</s>"],"temperature":0.6,"think":false})");
  m.messages = nlohmann::ordered_json::parse(
      R"([{"role":"user","content":"hi"},{"role":"assistant","content":" hello "}])");
  m.config = {{"renderer", "qwen3.5"}, {"parser", "qwen3.5"}};
  return m;
}

TEST(ModelfileFormat, WritesOllamasLayoutAndQuoting) {
  EXPECT_EQ(format_modelfile(sample_model()),
            "# Modelfile generated by \"hostlm show\"\n"
            "# To build a new Modelfile based on this, replace FROM with:\n"
            "# FROM qwen3.5:9b\n\n"
            "FROM /store/blobs/sha256-" +
                std::string(64, '1') +
                "\n"
                "TEMPLATE {{ .Prompt }}\n"
                "SYSTEM \" You are terse.\nVery.\"\n"
                "RENDERER qwen3.5\n"
                "PARSER qwen3.5\n"
                "PARAMETER num_ctx 32768\n"
                "PARAMETER stop <|im_end|>\n"
                "PARAMETER stop </s>\n"
                "PARAMETER temperature 0.6\n"
                "PARAMETER think false\n"
                "LICENSE MIT\n"
                "LICENSE \"\"\"Say \"hi\"\nthen go\"\"\"\n"
                "MESSAGE user hi\n"
                "MESSAGE assistant \" hello \"\n");
  EXPECT_EQ(format_parameters(sample_model().params),
            "num_ctx                        32768\n"
            "stop                           \"<|im_end|>\"\n"
            "stop                           \"</s>\"\n"
            "temperature                    0.6\n"
            "think                          false");
}

TEST(ModelfileFormat, RoundTripsThroughTheParser) {
  const StoredModel m = sample_model();
  const CreateRequest req = to_create_request(parse_modelfile(format_modelfile(m)), "/");
  EXPECT_EQ(*req.template_text, *m.template_text);
  EXPECT_EQ(*req.system, *m.system);
  EXPECT_EQ(req.license, m.licenses);
  EXPECT_EQ(req.parameters.dump(), m.params.dump());
  EXPECT_EQ(req.messages->dump(), m.messages.dump());
  EXPECT_EQ(*req.renderer, "qwen3.5");
  EXPECT_EQ(*req.parser, "qwen3.5");
}

}  // namespace
}  // namespace hostlm::ollama
