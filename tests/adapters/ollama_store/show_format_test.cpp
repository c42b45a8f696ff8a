// `ollama show` text (show.h format_show_info) from /api/show bodies: the sections, their
// order, the table layout (four-space indent and padding, trailing padding kept), the
// Model rows from details or model_info, Parameters split into columns, Metadata and
// Tensors only when verbose, the first two lines of System and License, and wrapping.
#include <gtest/gtest.h>

#include "hostlm/ollama/show.h"

namespace hostlm::ollama {
namespace {

using Json = nlohmann::ordered_json;

Json details(const char* family, const char* size, const char* quant) {
  return {
      {"details", {{"family", family}, {"parameter_size", size}, {"quantization_level", quant}}}};
}

TEST(ShowFormat, DetailsOnly) {
  EXPECT_EQ(format_show_info(details("qwen35", "9.0B", "Q4_K_M"), false),
            "  Model\n"
            "    architecture    qwen35    \n"
            "    parameters      9.0B      \n"
            "    quantization    Q4_K_M    \n"
            "\n");
}

TEST(ShowFormat, ModelInfoRowsInOllamasOrder) {
  Json show = details("qwen35", "", "F32");
  show["model_info"] = {{"general.architecture", "qwen35"},
                        {"general.parameter_count", 1234567},
                        {"qwen35.embedding_length", 64},
                        {"qwen35.context_length", 262144}};
  show["capabilities"] = {"completion", "tools", "thinking"};
  show["requires"] = "0.17.1";
  EXPECT_EQ(format_show_info(show, false),
            "  Model\n"
            "    architecture        qwen35    \n"
            "    parameters          1.23M     \n"
            "    context length      262144    \n"
            "    embedding length    64        \n"
            "    quantization        F32       \n"
            "    requires            0.17.1    \n"
            "\n"
            "  Capabilities\n"
            "    completion    \n"
            "    tools         \n"
            "    thinking      \n"
            "\n");
}

TEST(ShowFormat, ParametersSystemAndLicense) {
  Json show = details("qwen35", "0.8B", "Q8_0");
  show["parameters"] =
      "stop                           \"<|im_end|>\"\n"
      "temperature                    1\n"
      "top_k                          20";
  show["system"] = "You are a pirate!\n\n  Ahoy, matey!  \nWeigh anchor!\n";
  show["license"] = "Apache License\nVersion 2.0, January 2004\n";
  EXPECT_EQ(format_show_info(show, false),
            "  Model\n"
            "    architecture    qwen35    \n"
            "    parameters      0.8B      \n"
            "    quantization    Q8_0      \n"
            "\n"
            "  Parameters\n"
            "    stop           \"<|im_end|>\"    \n"
            "    temperature    1               \n"
            "    top_k          20              \n"
            "\n"
            "  System\n"
            "    You are a pirate!    \n"
            "    Ahoy, matey!         \n"
            "    ...                  \n"
            "\n"
            "  License\n"
            "    Apache License               \n"
            "    Version 2.0, January 2004    \n"
            "\n");
}

TEST(ShowFormat, VerboseAddsMetadataAndTensors) {
  Json show = details("test", "8B", "FP16");
  show["model_info"] = {
      {"test.context_length", 1000},     {"general.parameter_count", 8000000000.0},
      {"general.architecture", "test"},  {"some.bool", true},
      {"some.list", {1, 2, 3, 4, 5, 6}}, {"some.short", {"a", "b"}}};
  show["tensors"] = {{{"name", "blk.0.attn_k.weight"}, {"type", "BF16"}, {"shape", {42, 3117}}},
                     {{"name", "output.weight"}, {"type", "Q4_K"}, {"shape", {64, 1000000}}}};
  const std::string plain = format_show_info(show, false);
  EXPECT_EQ(plain.find("Metadata"), std::string::npos);
  EXPECT_EQ(plain.find("Tensors"), std::string::npos);
  EXPECT_EQ(format_show_info(show, true),
            "  Model\n"
            "    architecture      test    \n"
            "    parameters        8B      \n"
            "    context length    1000    \n"
            "    quantization      FP16    \n"
            "\n"
            "  Metadata\n"
            "    general.architecture       test                  \n"
            "    general.parameter_count    8e+09                 \n"
            "    some.bool                  true                  \n"
            "    some.list                  [1 2 3 ...+3 more]    \n"
            "    some.short                 [a b]                 \n"
            "    test.context_length        1000                  \n"
            "\n"
            "  Tensors\n"
            "    blk.0.attn_k.weight    BF16    [42 3117]       \n"
            "    output.weight          Q4_K    [64 1000000]    \n"
            "\n");
}

TEST(ShowFormat, LongCellsWrapBetweenWords) {
  Json show = details("qwen35", "9.0B", "Q4_K_M");
  show["model_info"] = {{"general.architecture", "qwen35"},
                        {"general.name", "aaaa bbbb cccc dddd eeee ffff gggg"}};
  EXPECT_EQ(format_show_info(show, true).substr(format_show_info(show, true).find("  Metadata\n")),
            "  Metadata\n"
            "    general.architecture    qwen35                            \n"
            "    general.name            aaaa bbbb cccc dddd eeee ffff     \n"
            "      "
            "                        gggg"
            "                              \n"
            "\n");
  // System and License wrap at 100 columns, not 30; the column is then 100 wide.
  Json sys = details("q", "1B", "F16");
  sys["system"] = std::string(60, 'x') + " " + std::string(50, 'y');
  const std::string text = format_show_info(sys, false);
  EXPECT_EQ(text.substr(text.find("  System")),
            "  System\n    " + std::string(60, 'x') + std::string(40 + 4, ' ') + "\n      " +
                std::string(50, 'y') + std::string(50 + 4, ' ') + "\n\n");
}

}  // namespace
}  // namespace hostlm::ollama
