// Every way a plugin can fail to load ends in a hostlm::Error that says which manifest,
// which library and what went wrong, and the registry stays usable afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "registry_test_support.h"

namespace hostlm::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(LoadingErrors, UnknownArchitectureListsTheKnownOnes) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_EQ(plugin_for_error(registry, "llama"),
            "no plugin claims architecture 'llama'; known: HostlmTestForCausalLM, hostlm-test");
}

TEST(LoadingErrors, UnknownArchitectureWithNoPluginsSaysWhereItLooked) {
  TempDir empty;
  PluginRegistry registry({empty.path(), empty.path() / "does-not-exist"});

  EXPECT_THAT(plugin_for_error(registry, "qwen35"),
              AllOf(HasSubstr("no plugin claims architecture 'qwen35'; known: none"),
                    HasSubstr(empty.path().string()), HasSubstr("HOSTLM_PLUGIN_PATH")));
}

TEST(LoadingErrors, MissingLibraryNamesTheManifestAndThePathsTried) {
  PluginFolder folder({"missing_library/hostlm_ghost.json"});
  PluginRegistry registry({folder.root()});
  const std::string manifest = folder.manifest("hostlm_ghost.json").string();
  const std::string tried = (folder.root() / "lib" / "libhostlm_ghost.so").string();

  ASSERT_EQ(registry.manifests().size(), 1u);
  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0],
              AllOf(HasSubstr(manifest), HasSubstr("library file not found"), HasSubstr(tried)));
  for (const char* arch : {"hostlm-ghost", "HostlmGhostForCausalLM"})
    EXPECT_THAT(plugin_for_error(registry, arch),
                AllOf(HasSubstr("plugin 'hostlm_ghost' (manifest " + manifest + ")"),
                      HasSubstr("library file not found"),
                      HasSubstr(folder.manifest("libhostlm_ghost.so").string()), HasSubstr(tried)));
}

TEST(LoadingErrors, LibraryTheLoaderRefusesGivesTheLoadersReason) {
  PluginFolder folder({"not_elf/hostlm_not_elf.json"});
  const fs::path library = folder.manifest("libhostlm_not_elf.so");
  // Longer than an ELF header, so the loader reads it and objects to its content.
  write_file(library, std::string(256, '#') + "\nnot an ELF file, whatever its name says\n");
  PluginRegistry registry({folder.root()});

  EXPECT_TRUE(registry.problems().empty()) << all_problems(registry);
  // The reason is dlerror()'s text, which names the file again.
  EXPECT_THAT(
      plugin_for_error(registry, "hostlm-not-elf"),
      AllOf(HasSubstr("plugin 'hostlm_not_elf'"),
            HasSubstr("cannot load library " + library.string() + ": " + library.string() + ": "),
            HasSubstr("invalid ELF header")));
}

TEST(LoadingErrors, LibraryWithoutEntrySymbolsIsNotAPlugin) {
  PluginFolder folder({"not_a_plugin/hostlm_not_a_plugin.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_THAT(plugin_for_error(registry, "hostlm-not-a-plugin"),
              AllOf(HasSubstr("plugin 'hostlm_not_a_plugin'"),
                    HasSubstr((folder.root() / "lib" / "libhostlm.so").string()),
                    HasSubstr("does not export hostlm_plugin_abi_version, hostlm_plugin_create")));
}

TEST(LoadingErrors, LibraryBuiltForAnotherAbiIsRefusedBeforeItsFactoryRuns) {
  // The bad-ABI library aborts the process if its factory is called.
  PluginFolder folder({"wrong_abi/hostlm_test_badabi.json"});
  PluginRegistry registry({folder.root()});

  const std::string message = plugin_for_error(registry, "hostlm-test-badabi");
  EXPECT_THAT(
      message,
      AllOf(HasSubstr("plugin 'hostlm_test_badabi'"), HasSubstr("libhostlm_testplugin_badabi.so"),
            HasSubstr("built for plugin ABI 999"),
            HasSubstr("this host uses plugin ABI " + std::to_string(HOSTLM_PLUGIN_ABI_VERSION))));
  // Asking again fails the same way rather than handing out a half-loaded plugin.
  EXPECT_EQ(plugin_for_error(registry, "hostlm-test-badabi"), message);
}

TEST(LoadingErrors, ManifestDeclaringAnotherAbiIsRefusedWithoutLoading) {
  PluginFolder folder({"manifest_abi/hostlm_future.json"});
  PluginRegistry registry({folder.root()});
  const std::string expected = "declares plugin ABI 1000 but this host uses plugin ABI " +
                               std::to_string(HOSTLM_PLUGIN_ABI_VERSION);

  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0], AllOf(HasSubstr("hostlm_future.json"), HasSubstr(expected)));
  EXPECT_THAT(plugin_for_error(registry, "hostlm-future"),
              AllOf(HasSubstr("plugin 'hostlm_future'"), HasSubstr(expected)));
}

TEST(LoadingErrors, TwoPluginsClaimingOneArchitectureMakeItUnusable) {
  PluginFolder folder({"conflict/hostlm_twin_a.json", "conflict/hostlm_twin_b.json"});
  PluginRegistry registry({folder.root()});
  const std::string a = folder.manifest("hostlm_twin_a.json").string();
  const std::string b = folder.manifest("hostlm_twin_b.json").string();

  ASSERT_EQ(registry.problems().size(), 1u) << all_problems(registry);
  EXPECT_THAT(registry.problems()[0],
              AllOf(HasSubstr("architecture 'hostlm-test'"), HasSubstr(a), HasSubstr(b)));
  EXPECT_THAT(plugin_for_error(registry, "hostlm-test"),
              AllOf(HasSubstr("architecture 'hostlm-test' is claimed by more than one plugin"),
                    HasSubstr("plugin 'hostlm_twin_a' (manifest " + a + ")"),
                    HasSubstr("plugin 'hostlm_twin_b' (manifest " + b + ")")));
  // What each claims alone still works.
  EXPECT_NO_THROW(registry.plugin_for("hostlm-twin-a"));
  EXPECT_NO_THROW(registry.plugin_for("HostlmTwinBForCausalLM"));
}

TEST(LoadingErrors, SameManifestReachedTwiceIsNoConflict) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  TempDir elsewhere;
  fs::create_directory_symlink(folder.manifests(), elsewhere.path() / "alias");
  PluginRegistry registry({folder.root(), folder.manifests(), elsewhere.path() / "alias",
                           folder.root() / "." / "manifests"});

  EXPECT_TRUE(registry.problems().empty()) << all_problems(registry);
  EXPECT_EQ(registry.manifests().size(), 1u);
  EXPECT_NO_THROW(registry.plugin_for("hostlm-test"));
}

TEST(LoadingErrors, FailedLoadDoesNotAffectOtherPlugins) {
  PluginFolder folder({"testplugin/hostlm_test.json", "wrong_abi/hostlm_test_badabi.json",
                       "missing_library/hostlm_ghost.json"});
  PluginRegistry registry({folder.root()});

  EXPECT_THAT(plugin_for_error(registry, "hostlm-test-badabi"), HasSubstr("ABI 999"));
  EXPECT_THAT(plugin_for_error(registry, "hostlm-ghost"), HasSubstr("not found"));
  EXPECT_NO_THROW(registry.plugin_for("hostlm-test"));
}

}  // namespace
}  // namespace hostlm::test
