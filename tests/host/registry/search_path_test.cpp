// Where the registry looks: the build tree, the install prefix next to libhostlm,
// $HOSTLM_PLUGIN_PATH and the user's folder; and how a manifest finds its library in both
// the build-tree and the installed layout.
#include "registry/search_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "registry/layout.h"
#include "registry/library_locator.h"
#include "registry_test_support.h"

namespace hostlm::test {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

bool holds(const std::vector<fs::path>& dirs, const fs::path& dir) {
  return std::find(dirs.begin(), dirs.end(), fs::canonical(dir)) != dirs.end();
}

TEST(SearchPath, DefaultPathFindsTheQwen35ManifestOfTheBuildTree) {
  ScopedEnv plugin_path("HOSTLM_PLUGIN_PATH", std::nullopt);
  PluginRegistry registry;  // never asked for qwen35: its library is not ours to load

  const PluginManifest* qwen = find_manifest(registry, "qwen35");
  ASSERT_NE(qwen, nullptr) << all_problems(registry);
  EXPECT_EQ(qwen->manifest_path, fs::canonical(build_dir() / "manifests" / "qwen35.json"));
  EXPECT_EQ(qwen->library, fs::canonical(build_dir() / "lib") / "libhostlm_qwen35.so");
  EXPECT_EQ(qwen->abi_version, HOSTLM_PLUGIN_ABI_VERSION);
  EXPECT_THAT(qwen->gguf_architectures, Contains("qwen35"));
  EXPECT_THAT(qwen->hf_architectures, Contains("Qwen3_5ForCausalLM"));
  EXPECT_THAT(qwen->hf_architectures, Contains("Qwen3_5ForConditionalGeneration"));
  EXPECT_THAT(qwen->hf_architectures, Contains("Qwen3_5MoeForConditionalGeneration"));
  EXPECT_THAT(qwen->gguf_architectures, Contains("qwen35moe"));
}

TEST(SearchPath, BuildTreeFoundTwiceThroughThePluginPathIsNoConflict) {
  ScopedEnv plugin_path("HOSTLM_PLUGIN_PATH", (build_dir() / "manifests").string() + ":" +
                                                  (build_dir() / "." / "manifests").string());
  PluginRegistry registry({build_dir() / "manifests", build_dir()});
  PluginRegistry by_default;

  for (const PluginRegistry* r : {&registry, &by_default}) {
    EXPECT_THAT(all_problems(*r), Not(HasSubstr("claimed by")));
    EXPECT_EQ(std::count_if(r->manifests().begin(), r->manifests().end(),
                            [](const PluginManifest& m) { return m.name == "qwen35"; }),
              1);
  }
}

TEST(SearchPath, DefaultOrderIsBuildTreeThenPluginPathThenUserFolder) {
  TempDir home;
  TempDir extra;
  fs::create_directories(home.path() / ".local/share/hostlm/plugins");
  ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
  ScopedEnv home_env("HOME", home.path().string());
  ScopedEnv plugin_path("HOSTLM_PLUGIN_PATH",
                        ":" + extra.path().string() + "::" + (extra.path() / "missing").string());

  EXPECT_THAT(PluginRegistry::default_search_path(),
              ElementsAre(fs::canonical(build_dir() / "manifests"), extra.path(),
                          home.path() / ".local/share/hostlm/plugins"));
}

TEST(SearchPath, UserFolderFollowsXdgDataHome) {
  TempDir data;
  fs::create_directories(data.path() / "hostlm/plugins");
  ScopedEnv xdg("XDG_DATA_HOME", data.path().string());
  ScopedEnv plugin_path("HOSTLM_PLUGIN_PATH", std::nullopt);

  EXPECT_TRUE(holds(PluginRegistry::default_search_path(), data.path() / "hostlm/plugins"));
}

TEST(SearchPath, PluginPathAddsTestPlugins) {
  PluginFolder folder({"testplugin/hostlm_test.json"});
  ScopedEnv plugin_path("HOSTLM_PLUGIN_PATH", folder.root().string());
  PluginRegistry registry;

  ASSERT_NE(find_manifest(registry, "hostlm_test"), nullptr) << all_problems(registry);
  ASSERT_NE(find_manifest(registry, "qwen35"), nullptr);
  EXPECT_NO_THROW(registry.plugin_for("hostlm-test"));
}

TEST(SearchPath, SplitsColonSeparatedListsDroppingEmptyEntries) {
  EXPECT_THAT(registry::split_path_list("a:b::/c/d:"), ElementsAre("a", "b", "/c/d"));
  EXPECT_TRUE(registry::split_path_list("").empty());
  EXPECT_TRUE(registry::split_path_list(":::").empty());
}

TEST(InstallLayout, PrefixIsDerivedFromWhereLibhostlmSits) {
  const fs::path libdir = registry::install_library_subdir();
  ASSERT_FALSE(libdir.is_absolute()) << "this build installs to absolute folders";
  EXPECT_EQ(registry::install_prefix_for("/opt/hostlm" / libdir), fs::path("/opt/hostlm"));
  EXPECT_EQ(registry::install_prefix_for("/home/me/.local" / libdir / ""),
            fs::path("/home/me/.local"));
  EXPECT_EQ(registry::install_prefix_for("/opt/hostlm/elsewhere"), std::nullopt);
  // Running from the build tree, which is not an install.
  EXPECT_TRUE(registry::running_from_build_tree());
  EXPECT_TRUE(fs::equivalent(registry::this_library_dir(), build_dir() / "lib"));
}

TEST(InstallLayout, BuildTreeIsRecognisedByItsMarkerOnly) {
  TempDir root;
  fs::create_directories(root.path() / "lib");
  fs::create_directories(root.path() / "share");
  // No marker: an installed tree, even though it has lib/.
  EXPECT_EQ(registry::build_tree_for(root.path() / "lib"), std::nullopt);

  std::ofstream(root.path() / registry::kBuildTreeMarker) << R"({"source_dir": "/src/hostlm"})";
  for (const fs::path& dir : {root.path() / "lib", root.path() / "bin/", root.path() / "lib/."}) {
    const auto tree = registry::build_tree_for(dir);
    ASSERT_TRUE(tree.has_value()) << dir;
    EXPECT_EQ(tree->root, root.path());
    EXPECT_EQ(tree->source_dir, fs::path("/src/hostlm"));
    EXPECT_EQ(tree->manifest_dir(), root.path() / "manifests");
    EXPECT_EQ(tree->plugin_dir(), root.path() / "lib");
  }
  // Only <root>/lib and <root>/bin count: an install prefix inside a build tree is an install.
  EXPECT_EQ(registry::build_tree_for(root.path() / "share"), std::nullopt);
  EXPECT_EQ(registry::build_tree_for(root.path() / "inst/lib"), std::nullopt);

  // A marker that is not JSON still marks the tree; only the sources are unknown.
  std::ofstream(root.path() / registry::kBuildTreeMarker) << "not json";
  const auto tree = registry::build_tree_for(root.path() / "lib");
  ASSERT_TRUE(tree.has_value());
  EXPECT_TRUE(tree->source_dir.empty());
}

TEST(InstallLayout, InstalledManifestFindsItsLibraryInThePluginFolder) {
  // <prefix>/share/hostlm/manifests/hostlm_test.json, <prefix>/lib/hostlm/plugins/*.so
  TempDir prefix;
  const fs::path manifests = prefix.path() / registry::install_manifest_subdir();
  const fs::path plugins = prefix.path() / registry::install_plugin_subdir();
  fs::create_directories(manifests);
  fs::create_directories(plugins);
  fs::copy_file(fixtures_dir() / "testplugin" / "hostlm_test.json", manifests / "hostlm_test.json");
  fs::create_symlink(build_dir() / "lib" / "libhostlm_testplugin.so",
                     plugins / "libhostlm_testplugin.so");
  PluginRegistry registry({manifests});

  ASSERT_TRUE(registry.problems().empty()) << all_problems(registry);
  ASSERT_EQ(registry.manifests().size(), 1u);
  EXPECT_EQ(registry.manifests()[0].library, plugins / "libhostlm_testplugin.so");
  EXPECT_NO_THROW(registry.plugin_for("hostlm-test"));
}

TEST(InstallLayout, LibraryCandidatesInOrder) {
  const fs::path installed = "/opt/hostlm" / registry::install_manifest_subdir();
  EXPECT_THAT(registry::locate_library(installed, "libx.so").tried,
              ElementsAre(installed / "libx.so",
                          "/opt/hostlm" / registry::install_plugin_subdir() / "libx.so"));
  EXPECT_THAT(registry::locate_library("/p/manifests", "libx.so").tried,
              ElementsAre("/p/manifests/libx.so", "/p/lib/libx.so", "/p/libx.so"));
  EXPECT_THAT(registry::locate_library("/p/manifests", "sub/../libx.so").tried,
              ElementsAre("/p/manifests/libx.so", "/p/lib/libx.so", "/p/libx.so"));
  EXPECT_THAT(registry::locate_library("/p/manifests", "/abs/libx.so").tried,
              ElementsAre("/abs/libx.so"));
  EXPECT_THAT(registry::locate_library("/p/plugins", "libx.so").tried,
              ElementsAre("/p/plugins/libx.so"));
}

TEST(InstallLayout, ManifestsMayLieDirectlyInTheFolderOrInItsManifestsSubfolder) {
  PluginFolder folder({"testplugin/hostlm_test.json"});

  for (const fs::path& dir : {folder.root(), folder.manifests()}) {
    PluginRegistry registry({dir});
    EXPECT_EQ(registry.manifests().size(), 1u) << dir;
  }
}

}  // namespace
}  // namespace hostlm::test
