// Bad manifests are reported by file and field, and never take the rest of the registry
// down with them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "registry/manifest_parser.h"
#include "registry_test_support.h"

namespace hostlm::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ManifestProblems, UnparsableManifestIsAProblemNamingTheFile) {
  PluginFolder folder({"unparsable/hostlm_truncated.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_TRUE(registry.manifests().empty());
  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0],
              AllOf(HasSubstr(folder.manifest("hostlm_truncated.json").string()),
                    HasSubstr("not valid JSON"), HasSubstr("line 5")));
}

TEST(ManifestProblems, MissingFieldIsNamed) {
  PluginFolder folder({"lacking_fields/hostlm_no_version.json"});
  PluginRegistry registry({folder.root()});

  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0],
              AllOf(HasSubstr(folder.manifest("hostlm_no_version.json").string()),
                    HasSubstr("field 'version' is missing")));
  EXPECT_THAT(plugin_for_error(registry, "hostlm-no-version"),
              HasSubstr("no plugin claims architecture 'hostlm-no-version'"));
}

TEST(ManifestProblems, IllTypedFieldsAreNamedWithTheirType) {
  PluginFolder folder({"lacking_fields/hostlm_abi_as_string.json",
                       "lacking_fields/hostlm_bad_arch_entry.json",
                       "lacking_fields/hostlm_no_architectures.json"});
  PluginRegistry registry({folder.root()});

  ASSERT_EQ(registry.problems().size(), 3u) << all_problems(registry);
  // Files are read in name order.
  EXPECT_THAT(registry.problems()[0],
              AllOf(HasSubstr("hostlm_abi_as_string.json"),
                    HasSubstr("field 'abi_version' must be an integer, not string")));
  EXPECT_THAT(registry.problems()[1],
              AllOf(HasSubstr("hostlm_bad_arch_entry.json"),
                    HasSubstr("field 'architectures.hf[1]' must be a string, not number")));
  EXPECT_THAT(registry.problems()[2], AllOf(HasSubstr("hostlm_no_architectures.json"),
                                            HasSubstr("field 'architectures' is missing")));
}

TEST(ManifestProblems, BadManifestsLeaveTheRestWorking) {
  PluginFolder folder({"testplugin/hostlm_test.json", "unparsable/hostlm_truncated.json",
                       "lacking_fields/hostlm_no_version.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_EQ(registry.problems().size(), 2u) << all_problems(registry);
  ASSERT_EQ(registry.manifests().size(), 1u);
  EXPECT_EQ(registry.manifests()[0].name, "hostlm_test");
  EXPECT_NO_THROW(registry.plugin_for("hostlm-test"));
}

// The parser on its own, for the rules a fixture file per case would only clutter.
class ManifestParser : public ::testing::Test {
 protected:
  static std::string error_for(const std::string& text) {
    try {
      registry::parse_manifest_text(text, "/plugins/x.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  static constexpr const char* kArchs = R"("architectures": {"gguf": ["x"]})";
};

TEST_F(ManifestParser, ReadsEveryField) {
  PluginManifest m = registry::parse_manifest_text(
      R"({"name": "x", "version": "2.1", "abi_version": 1, "library": "libx.so",
          "description": "an x", "architectures": {"gguf": ["x", "x2"], "hf": ["XForCausalLM"]}})",
      "/plugins/x.json");
  EXPECT_EQ(m.name, "x");
  EXPECT_EQ(m.version, "2.1");
  EXPECT_EQ(m.abi_version, 1);
  EXPECT_EQ(m.library, "libx.so");
  EXPECT_EQ(m.description, "an x");
  EXPECT_EQ(m.manifest_path, "/plugins/x.json");
  EXPECT_EQ(m.gguf_architectures, (std::vector<std::string>{"x", "x2"}));
  EXPECT_EQ(m.hf_architectures, (std::vector<std::string>{"XForCausalLM"}));
}

TEST_F(ManifestParser, EitherArchitectureListMayBeLeftOut) {
  PluginManifest m = registry::parse_manifest_text(
      R"({"name": "x", "version": "1", "abi_version": 1, "library": "l.so",
          "architectures": {"hf": ["XForCausalLM"]}})",
      "/plugins/x.json");
  EXPECT_TRUE(m.gguf_architectures.empty());
  EXPECT_EQ(m.hf_architectures.size(), 1u);
}

TEST_F(ManifestParser, RejectsWhatWouldFailLater) {
  const std::string base = R"("name": "x", "version": "1", "abi_version": 1, "library": "l.so")";
  EXPECT_THAT(error_for("[1, 2]"),
              AllOf(HasSubstr("manifest /plugins/x.json"), HasSubstr("must be a JSON object")));
  EXPECT_THAT(error_for(R"({"name": "", "version": "1", "abi_version": 1, "library": "l.so", )" +
                        std::string(kArchs) + "}"),
              HasSubstr("field 'name' is empty"));
  EXPECT_THAT(error_for(R"({"name": "x", "version": 1, "abi_version": 1, "library": "l.so", )" +
                        std::string(kArchs) + "}"),
              HasSubstr("field 'version' must be a string, not number"));
  EXPECT_THAT(error_for(R"({"name": "x", "version": "1", "abi_version": 1.5, "library": "l", )" +
                        std::string(kArchs) + "}"),
              HasSubstr("field 'abi_version' must be an integer, not number"));
  EXPECT_THAT(
      error_for(R"({"name": "x", "version": "1", "abi_version": 1, )" + std::string(kArchs) + "}"),
      HasSubstr("field 'library' is missing"));
  EXPECT_THAT(error_for("{" + base + R"(, "architectures": {"GGUF": ["x"]}})"),
              HasSubstr("field 'architectures.GGUF' is unknown"));
  EXPECT_THAT(error_for("{" + base + R"(, "architectures": {"gguf": [], "hf": []}})"),
              HasSubstr("claims nothing"));
  EXPECT_THAT(error_for("{" + base + R"(, "architectures": ["x"]})"),
              HasSubstr("field 'architectures' must be an object"));
  EXPECT_THAT(error_for("{" + base + R"(, "description": 3, )" + std::string(kArchs) + "}"),
              HasSubstr("field 'description' must be a string"));
}

}  // namespace
}  // namespace hostlm::test
