// Multi-file checkpoints made from tiny-tied-f32: with an index, and without one.
#include <gtest/gtest.h>

#include <cstring>

#include "hostlm/safetensors.h"
#include "st_test_util.h"

namespace hostlm {
namespace {

using st_test::model_dir;
using st_test::TempDir;
using st_test::write_file;

// Splits tiny-tied-f32 into two shard files in `dir`: even-indexed tensors in the first,
// odd-indexed in the second, so both shards mix layers. Returns the index's weight_map.
nlohmann::json split_reference(const std::vector<TensorView>& tensors, const TempDir& dir,
                               const std::string& first, const std::string& second) {
  std::vector<const TensorView*> a, b;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < tensors.size(); ++i) {
    (i % 2 == 0 ? a : b).push_back(&tensors[i]);
    weight_map[tensors[i].name] = i % 2 == 0 ? first : second;
  }
  write_file(dir / first, st_test::safetensors_of(a));
  write_file(dir / second, st_test::safetensors_of(b));
  std::filesystem::copy_file(model_dir("tiny-tied-f32") / "config.json", dir / "config.json");
  return weight_map;
}

void expect_same_tensors(const HfCheckpoint& ref, const HfCheckpoint& got) {
  ASSERT_EQ(ref.tensors().size(), got.tensors().size());
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    const TensorView& a = ref.tensors()[i];
    const TensorView& b = got.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.shape, b.shape);
    ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name;
    EXPECT_EQ(got.find(a.name), &b);
  }
  EXPECT_EQ(ref.config(), got.config());
}

TEST(ShardedCheckpoint, IndexedShardsGiveIdenticalTensors) {
  const auto ref = HfCheckpoint::open(model_dir("tiny-tied-f32"));
  TempDir dir;
  const std::string s1 = "model-00001-of-00002.safetensors";
  const std::string s2 = "model-00002-of-00002.safetensors";
  const nlohmann::json weight_map = split_reference(ref->tensors(), dir, s1, s2);
  write_file(dir / "model.safetensors.index.json",
             nlohmann::json({{"metadata", {{"total_size", 1358592}}}, {"weight_map", weight_map}})
                 .dump(2));
  const auto got = HfCheckpoint::open(dir.path());
  expect_same_tensors(*ref, *got);
}

TEST(ShardedCheckpoint, ShardsInSubfolderAndDotSegmentsAreAllowed) {
  const auto ref = HfCheckpoint::open(model_dir("tiny-tied-f32"));
  TempDir dir;
  std::filesystem::create_directory(dir / "weights");
  nlohmann::json weight_map =
      split_reference(ref->tensors(), dir, "weights/a.safetensors", "weights/b.safetensors");
  // The same shard spelled two ways must be opened once, not reported as a duplicate.
  for (auto it = weight_map.begin(); it != weight_map.end(); ++it)
    if (*it == "weights/a.safetensors" && it.key().find("layers.1.") != std::string::npos)
      *it = "./weights/./a.safetensors";
  write_file(dir / "model.safetensors.index.json",
             nlohmann::json({{"weight_map", weight_map}}).dump());
  expect_same_tensors(*ref, *HfCheckpoint::open(dir.path()));
}

TEST(ShardedCheckpoint, UnindexedFilesAreAllRead) {
  const auto ref = HfCheckpoint::open(model_dir("tiny-tied-f32"));
  TempDir dir;
  split_reference(ref->tensors(), dir, "part-b.safetensors", "part-a.safetensors");
  expect_same_tensors(*ref, *HfCheckpoint::open(dir.path()));
}

TEST(ShardedCheckpoint, SingleModelFileWinsOverOtherSafetensors) {
  TempDir dir;
  std::filesystem::copy_file(model_dir("tiny-tied-f32") / "config.json", dir / "config.json");
  std::filesystem::copy_file(model_dir("tiny-tied-f32") / "model.safetensors",
                             dir / "model.safetensors");
  // A stray file that would clash if globbed; model.safetensors alone is the checkpoint.
  std::filesystem::copy_file(model_dir("tiny-tied-f32") / "model.safetensors",
                             dir / "consolidated.safetensors");
  EXPECT_EQ(HfCheckpoint::open(dir.path())->tensors().size(), 55u);
}

}  // namespace
}  // namespace hostlm
