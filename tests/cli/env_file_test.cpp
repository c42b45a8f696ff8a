// The settings file of `hostlm serve --config` (host/cli/env_file.h): systemd's
// EnvironmentFile= form, and errors that name the file and line.
#include "env_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hostlm/error.h"

namespace hostlm::cli {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view text) {
  try {
    parse_env_file(text, "hostlm.env");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(EnvFile, ReadsTheServiceFileForm) {
  const EnvFile f = parse_env_file(
      "# a comment\n"
      "; another\n"
      "\n"
      "HOSTLM_HOST=127.0.0.1:11434\n"
      "  HOSTLM_KEEP_ALIVE = 10m   \n"
      "HOSTLM_API_KEY=\"se cret \\\"q\\\" \\\\ \\$x\"\n"
      "HOSTLM_ORIGINS='http://a, $HOME \\n'\n"
      "EMPTY=\n"
      "HOSTLM_HOST=0.0.0.0:8080\r\n",
      "hostlm.env");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f.at("HOSTLM_HOST").value, "0.0.0.0:8080") << "the last one wins";
  EXPECT_EQ(f.at("HOSTLM_HOST").line, 9);
  EXPECT_EQ(f.at("HOSTLM_KEEP_ALIVE").value, "10m");
  EXPECT_EQ(f.at("HOSTLM_KEEP_ALIVE").line, 5);
  EXPECT_EQ(f.at("HOSTLM_API_KEY").value, "se cret \"q\" \\ $x");
  EXPECT_EQ(f.at("HOSTLM_ORIGINS").value, "http://a, $HOME \\n") << "single quotes: literal";
  EXPECT_EQ(f.at("EMPTY").value, "");
}

TEST(EnvFile, NamesFileAndLineOfWhatItCannotRead) {
  EXPECT_THAT(error_of("A=1\nno equals sign\n"),
              HasSubstr("hostlm.env:2: expected KEY=VALUE, got 'no equals sign'"));
  EXPECT_THAT(error_of("\n\n1ABC=x\n"), HasSubstr("hostlm.env:3: '1ABC' is not a variable name"));
  EXPECT_THAT(error_of("MY-KEY=x"), HasSubstr("hostlm.env:1: 'MY-KEY' is not a variable name"));
  EXPECT_THAT(error_of("=x"), HasSubstr("hostlm.env:1: '' is not a variable name"));
  EXPECT_THAT(error_of("A=\"open\nB=2\n"), HasSubstr("hostlm.env:1: the value has no closing \""));
  EXPECT_THAT(error_of("A='x' y"), HasSubstr("hostlm.env:1: unexpected text after the closing '"));
}

TEST(EnvFile, ReadsFilesAndSaysWhyItCannot) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hostlm-env-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "hostlm";
  std::ofstream(file) << "HOSTLM_MAX_QUEUE=8\n";
  EXPECT_EQ(read_env_file(file).at("HOSTLM_MAX_QUEUE").value, "8");
  try {
    read_env_file(dir / "missing");
    ADD_FAILURE() << "a missing file must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read settings file"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
  EXPECT_THROW(read_env_file(dir), Error);
  std::ofstream(file) << "HOSTLM_MAX_QUEUE=8\nbroken\n";
  try {
    read_env_file(file);
    ADD_FAILURE() << "a broken file must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(file.string() + ":2:"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hostlm::cli
