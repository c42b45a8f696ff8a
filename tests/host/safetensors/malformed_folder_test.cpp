// Broken model folders: config.json, shard indexes, and tensors spread over several files.
#include <gtest/gtest.h>

#include "hostlm/safetensors.h"
#include "st_test_util.h"

namespace hostlm {
namespace {

using st_test::error_of;
using st_test::names;
using st_test::safetensors_bytes;
using st_test::TempDir;
using st_test::write_file;
namespace fs = std::filesystem;

// One F32 tensor [1] per name, in a file of its own layout.
std::string tensors_file(const std::vector<std::string>& tensor_names) {
  nlohmann::json h = nlohmann::json::object();
  for (size_t i = 0; i < tensor_names.size(); ++i)
    h[tensor_names[i]] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {4 * i, 4 * i + 4}}};
  return safetensors_bytes(h.dump(), std::string(4 * tensor_names.size(), '\0'));
}

class MalformedFolder : public ::testing::Test {
 protected:
  void SetUp() override { write_file(dir_ / "config.json", R"({"model_type": "qwen3_5_text"})"); }
  void write_index(const nlohmann::json& weight_map) {
    write_file(index_, nlohmann::json({{"weight_map", weight_map}}).dump());
  }
  std::string open_error() {
    return error_of([&] { HfCheckpoint::open(dir_.path()); });
  }

  TempDir dir_;
  fs::path index_ = dir_ / "model.safetensors.index.json";
};

TEST_F(MalformedFolder, NotADirectory) {
  const fs::path nowhere = dir_ / "nowhere";
  EXPECT_TRUE(names(error_of([&] { HfCheckpoint::open(nowhere); }), nowhere, "not a directory"));
}

TEST_F(MalformedFolder, MissingConfigJson) {
  fs::remove(dir_ / "config.json");
  write_file(dir_ / "model.safetensors", tensors_file({"w"}));
  EXPECT_TRUE(names(open_error(), dir_ / "config.json", "missing"));
}

TEST_F(MalformedFolder, UnparsableConfigJson) {
  write_file(dir_ / "config.json", R"({"hidden_size": 64,)");
  write_file(dir_ / "model.safetensors", tensors_file({"w"}));
  EXPECT_TRUE(names(open_error(), dir_ / "config.json", "invalid JSON"));
}

TEST_F(MalformedFolder, ConfigJsonNotAnObject) {
  write_file(dir_ / "config.json", "[]");
  write_file(dir_ / "model.safetensors", tensors_file({"w"}));
  EXPECT_TRUE(names(open_error(), dir_ / "config.json", "not a JSON object"));
}

TEST_F(MalformedFolder, NoSafetensorsAtAll) {
  EXPECT_TRUE(names(open_error(), dir_.path(), "no model.safetensors"));
}

TEST_F(MalformedFolder, BadSingleFileNamesThatFile) {
  write_file(dir_ / "model.safetensors", safetensors_bytes("[]"));
  EXPECT_TRUE(names(open_error(), dir_ / "model.safetensors", "not a JSON object"));
}

TEST_F(MalformedFolder, IndexNamingMissingShard) {
  write_file(dir_ / "a.safetensors", tensors_file({"x"}));
  write_index({{"x", "a.safetensors"}, {"y", "b.safetensors"}});
  const std::string msg = open_error();
  EXPECT_TRUE(names(msg, dir_ / "b.safetensors", "missing shard file"));
  EXPECT_NE(msg.find(index_.string()), std::string::npos) << msg;
}

TEST_F(MalformedFolder, IndexNamingTensorMissingFromShard) {
  write_file(dir_ / "a.safetensors", tensors_file({"x"}));
  write_index({{"x", "a.safetensors"}, {"y", "a.safetensors"}});
  const std::string msg = open_error();
  EXPECT_TRUE(names(msg, index_, "tensor 'y' is listed in"));
  EXPECT_NE(msg.find((dir_ / "a.safetensors").string()), std::string::npos) << msg;
}

TEST_F(MalformedFolder, IndexPathEscapingFolder) {
  write_file(dir_ / "a.safetensors", tensors_file({"x"}));
  write_index({{"x", "../a.safetensors"}});
  EXPECT_TRUE(names(open_error(), index_,
                    "shard '../a.safetensors' of tensor 'x' escapes the model folder"));
  write_index({{"x", "sub/../../a.safetensors"}});
  EXPECT_TRUE(names(open_error(), index_, "escapes the model folder"));
  write_index({{"x", (dir_ / "a.safetensors").string()}});
  EXPECT_TRUE(names(open_error(), index_, "is an absolute path"));
  write_index({{"x", "./"}});
  EXPECT_TRUE(names(open_error(), index_, "does not name a file"));
  write_index({{"x", ""}});
  EXPECT_TRUE(names(open_error(), index_, "tensor 'x' has an empty shard name"));
  write_index({{"x", std::string("a.safetensors\0/../../x", 22)}});
  EXPECT_TRUE(
      names(open_error(), index_, R"('a.safetensors\x00/../../x' of tensor 'x' contains a NUL)"));
}

TEST_F(MalformedFolder, IndexMalformed) {
  write_file(index_, "{");
  EXPECT_TRUE(names(open_error(), index_, "invalid JSON"));
  write_file(index_, R"({"metadata": {}})");
  EXPECT_TRUE(names(open_error(), index_, "missing or non-object \"weight_map\""));
  write_index(nlohmann::json::object());
  EXPECT_TRUE(names(open_error(), index_, "\"weight_map\" lists no tensors"));
  write_index({{"x", 3}});
  EXPECT_TRUE(names(open_error(), index_, "shard of tensor 'x' is not a string"));
  write_file(index_, R"({"weight_map": {"x": "a.safetensors", "x": "b.safetensors"}})");
  EXPECT_TRUE(names(open_error(), index_, "duplicate key 'x'"));
}

TEST_F(MalformedFolder, DuplicateNamesAcrossShards) {
  write_file(dir_ / "a.safetensors", tensors_file({"x", "y"}));
  write_file(dir_ / "b.safetensors", tensors_file({"y", "z"}));
  // Without an index every *.safetensors is read, in name order.
  std::string msg = open_error();
  EXPECT_TRUE(names(msg, dir_ / "b.safetensors", "tensor 'y' is also in"));
  EXPECT_NE(msg.find((dir_ / "a.safetensors").string()), std::string::npos) << msg;
  // With an index the shards are read whole, so the clash is found too.
  write_index({{"x", "a.safetensors"}, {"y", "a.safetensors"}, {"z", "b.safetensors"}});
  msg = open_error();
  EXPECT_TRUE(names(msg, dir_ / "b.safetensors", "tensor 'y' is also in"));
}

TEST_F(MalformedFolder, UnsupportedDtypeThroughCheckpoint) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("w_scale":{"dtype":"F8_E8M0","shape":[1],"data_offsets":[4,5]}})";
  write_file(dir_ / "model.safetensors", safetensors_bytes(header, std::string(5, '\0')));
  const auto ckpt = HfCheckpoint::open(dir_.path());
  ASSERT_EQ(ckpt->tensors().size(), 1u);
  EXPECT_EQ(ckpt->tensors()[0].name, "w");
  EXPECT_TRUE(names(error_of([&] { ckpt->find("w_scale"); }), dir_ / "model.safetensors",
                    "tensor 'w_scale' has dtype F8_E8M0"));
}

}  // namespace
}  // namespace hostlm
