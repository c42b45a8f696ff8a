// `hostlm create / list / show / cp / rm` as users run them, on the tiny model converted to
// GGUF by `hostlm convert`, and a store model name given to `run` and `logits`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>

#include "store_test_util.h"

namespace hostlm::ollama {
namespace {

using namespace testing;

fs::path hostlm_binary() {
  if (const char* build = std::getenv("HOSTLM_BUILD_DIR"); build && *build)
    return fs::path(build) / "bin" / "hostlm";
  return fs::read_symlink("/proc/self/exe").parent_path() / "hostlm";
}

struct Result {
  int code = -1;
  std::string out, err;
};

class CliStoreTest : public ::testing::Test {
 protected:
  ScratchDir dir_{"cli-store"};

  Result hostlm(const std::string& args) {
    const fs::path out = dir_.path() / "stdout", err = dir_.path() / "stderr";
    const std::string cmd = "cd '" + dir_.path().string() + "' && HOSTLM_MODELS='" +
                            (dir_.path() / "models").string() + "' OLLAMA_MODELS='" +
                            (dir_.path() / "no-ollama").string() + "' '" +
                            hostlm_binary().string() + "' " + args + " >'" + out.string() +
                            "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  void SetUp() override {
    const Result c = hostlm("convert '" + tiny_model().string() + "' tiny.gguf --type f32");
    ASSERT_EQ(c.code, 0) << c.err;
    spit(dir_.path() / "Modelfile",
         "# the tiny test model\nFROM ./tiny.gguf\nSYSTEM You are a tiny model.\n"
         "PARAMETER temperature 0\nPARAMETER num_predict 4\nPARAMETER stop <|im_end|>\nLICENSE "
         "Apache 2.0\n");
  }
};

TEST_F(CliStoreTest, CreateListShowCopyRemove) {
  Result r = hostlm("create tiny -f Modelfile");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("copying file 100%"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("parsing GGUF"), std::string::npos);
  EXPECT_NE(r.err.find("writing manifest\nsuccess\n"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  r = hostlm("list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("^NAME +ID +SIZE +MODIFIED\ntiny:latest +[0-9a-f]{12} +[0-9.]+ [KM]B "
                        "+(Less than a second|[0-9]+ seconds) ago\n$")))
      << r.out;

  r = hostlm("show tiny --modelfile");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# FROM tiny:latest\n\nFROM " +
                       (dir_.path() / "models" / "blobs" / "sha256-").string()),
            std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find(
          "\nSYSTEM You are a tiny model.\nPARAMETER num_predict 4\nPARAMETER stop <|im_end|>\n"
          "PARAMETER temperature 0\nLICENSE Apache 2.0\n"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(hostlm("show tiny --system").out, "You are a tiny model.\n");
  EXPECT_EQ(hostlm("show tiny --license").out, "Apache 2.0\n");
  EXPECT_EQ(hostlm("show tiny --parameters").out,
            "num_predict                    4\nstop                           \"<|im_end|>\"\n"
            "temperature                    0\n");
  EXPECT_EQ(hostlm("show tiny --template").out, "");
  r = hostlm("show tiny");  // `ollama show`'s sections, order and table layout
  EXPECT_EQ(r.out,
            "  Model\n"
            "    architecture        qwen35    \n"
            "    parameters          340K      \n"
            "    context length      32768     \n"
            "    embedding length    64        \n"
            "    quantization        F32       \n"
            "\n"
            "  Capabilities\n"
            "    completion    \n"
            "    tools         \n"
            "    thinking      \n"
            "\n"
            "  Parameters\n"
            "    num_predict    4               \n"
            "    stop           \"<|im_end|>\"    \n"
            "    temperature    0               \n"
            "\n"
            "  System\n"
            "    You are a tiny model.    \n"
            "\n"
            "  License\n"
            "    Apache 2.0    \n"
            "\n")
      << r.out;
  r = hostlm("show -v tiny");
  EXPECT_NE(r.out.find("\n  Metadata\n    general.architecture  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("qwen35.attention.layer_norm_rms_epsilon    1e-06 "), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  Tensors\n    token_embd.weight +F32    "
                                                  "\\[64 2048\\]    \n")))
      << r.out;
  EXPECT_NE(hostlm("show tiny --system --license").code, 0);  // one part at a time

  r = hostlm("cp tiny me/other:v1");
  EXPECT_EQ(r.out, "copied 'tiny' to 'me/other:v1'\n");
  r = hostlm("list");
  EXPECT_NE(r.out.find("me/other:v1"), std::string::npos);
  r = hostlm("rm tiny me/other:v1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "deleted 'tiny'\ndeleted 'me/other:v1'\n");
  EXPECT_EQ(hostlm("list").out, "NAME   ID   SIZE   MODIFIED\n");
  EXPECT_TRUE(blob_names(dir_.path() / "models").empty());
}

TEST_F(CliStoreTest, RunAndLogitsTakeAStoreNameWithItsParameters) {
  ASSERT_EQ(hostlm("create tiny -f Modelfile").code, 0);
  // temperature 0 and num_predict 4 come from the Modelfile.
  const Result by_name = hostlm("run tiny --tokens 1,2,3");
  ASSERT_EQ(by_name.code, 0) << by_name.err;
  const Result by_path = hostlm("run tiny.gguf --tokens 1,2,3 -n 4 --temp 0");
  ASSERT_EQ(by_path.code, 0) << by_path.err;
  EXPECT_EQ(by_name.out, by_path.out);
  EXPECT_TRUE(std::regex_match(by_name.out, std::regex("[0-9]+(,[0-9]+){3}\n"))) << by_name.out;
  const Result flag_wins = hostlm("run tiny --tokens 1,2,3 -n 2");
  EXPECT_TRUE(std::regex_match(flag_wins.out, std::regex("[0-9]+,[0-9]+\n"))) << flag_wins.out;
  const Result logits = hostlm("logits tiny --tokens 1,2 --output logits.bin");
  EXPECT_EQ(logits.code, 0) << logits.err;
  const Result chat = hostlm("run tiny --prompt hi --no-think");
  EXPECT_EQ(chat.code, 0) << chat.err;
}

TEST_F(CliStoreTest, ClearErrors) {
  Result r = hostlm("rm nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "hostlm: model 'nope' not found\n");
  r = hostlm("create x -f missing");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err,
            "hostlm: " + (dir_.path() / "missing").string() + ": cannot read the Modelfile\n");
  spit(dir_.path() / "Bad", "FROM ./tiny.gguf\nPARAMETER foo 1\n");
  r = hostlm("create x -f Bad");
  EXPECT_EQ(r.err,
            "hostlm: " + (dir_.path() / "Bad").string() + " (line 2): unknown parameter 'foo'\n");
  spit(dir_.path() / "Warn", "FROM ./tiny.gguf\nPARAMETER mirostat 1\n");
  r = hostlm("create x -f Warn");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("warning: (line 2): parameter mirostat is deprecated\n", 0), 0u) << r.err;
  r = hostlm("show nope");
  EXPECT_EQ(r.err, "hostlm: model 'nope' not found\n");
  r = hostlm("cp nope x");
  EXPECT_EQ(r.err, "hostlm: model 'nope' not found\n");
  r = hostlm("create 'bad name' -f Warn");
  EXPECT_EQ(r.err, "hostlm: invalid model name\n");
  r = hostlm("run missing-model --tokens 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing-model"), std::string::npos);
}

}  // namespace
}  // namespace hostlm::ollama
