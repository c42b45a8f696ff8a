// The writer: atomic replacement, no temporary file left behind on failure, clear errors on
// I/O failure, and refusal of anything the reader would refuse.
#include <signal.h>
#include <sys/resource.h>

#include <cstdint>

#include "gguf_test_util.h"

namespace hostlm::test {
namespace {

bool only_entry_is(const std::filesystem::path& dir, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  return names == std::vector<std::string>{name};
}

bool is_empty_dir(const std::filesystem::path& dir) {
  return std::filesystem::directory_iterator(dir) == std::filesystem::directory_iterator();
}

TEST(GgufWriter, ReplacesExistingFileAndLeavesNoTemporary) {
  TempDir dir;
  const auto path = dir.file("out.gguf");
  write_file(path, "old contents");
  GgufWriter w;
  w.set("k", GgufValue::string("new"));
  w.write(path);
  EXPECT_TRUE(only_entry_is(dir.path(), "out.gguf"));
  EXPECT_EQ(GgufFile::open(path)->get_string("k"), "new");
}

TEST(GgufWriter, MissingDirectoryIsAClearError) {
  TempDir dir;
  const auto path = dir.file("no/such/dir/out.gguf");
  EXPECT_TRUE(throws_error_with(
      [&] { GgufWriter().write(path); },
      {path.string() + ": ", "cannot create temporary file", "No such file or directory"}));
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

TEST(GgufWriter, FailedRenameRemovesTemporary) {
  TempDir dir;
  const auto path = dir.file("taken");
  std::filesystem::create_directories(path / "child");  // rename() cannot replace it
  EXPECT_TRUE(throws_error_with([&] { GgufWriter().write(path); },
                                {path.string() + ": ", "cannot rename"}));
  EXPECT_TRUE(only_entry_is(dir.path(), "taken"));
  EXPECT_TRUE(std::filesystem::is_directory(path / "child"));
}

TEST(GgufWriter, WriteFailureIsAClearErrorAndRemovesTemporary) {
  // A file size limit makes write() fail with EFBIG once SIGXFSZ is ignored: a disk-full
  // condition without needing a full disk.
  TempDir dir;
  const auto path = dir.file("big.gguf");
  const auto data = pattern(1 << 16, 9);
  GgufWriter w;
  w.add_tensor("t", DType::I8, {data.size()}, data.data(), data.size());

  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string msg;
  try {
    w.write(path);
  } catch (const Error& e) {
    threw = true;
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &old, nullptr);

  ASSERT_TRUE(threw);
  EXPECT_EQ(msg.rfind(path.string() + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("write to"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

TEST(GgufWriter, BadAlignmentIsRefused) {
  TempDir dir;
  for (uint64_t a : {uint64_t{0}, uint64_t{3}, uint64_t{48}, uint64_t{1} << 33}) {
    const auto path = dir.file("a.gguf");
    EXPECT_TRUE(throws_error_with([&] { GgufWriter(a).write(path); },
                                  {path.string() + ": ", "alignment " + std::to_string(a)}));
  }
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

TEST(GgufWriter, AlignmentKeyMustMatchTheWriter) {
  TempDir dir;
  const auto path = dir.file("a.gguf");
  GgufWriter w(64);
  w.set("general.alignment", GgufValue::u32(32));
  EXPECT_TRUE(throws_error_with([&] { w.write(path); }, {"general.alignment must be a u32 equal"}));
  w.set("general.alignment", GgufValue::u64(64));  // gguf-py reads only u32
  EXPECT_TRUE(throws_error_with([&] { w.write(path); }, {"general.alignment must be a u32 equal"}));
  w.set("general.alignment", GgufValue::u32(64));
  w.write(path);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->metadata().size(), 1u);  // not added a second time
}

TEST(GgufWriter, ValuesThatDoNotMatchTheirTypeAreRefused) {
  GgufWriter w;
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::U8, uint64_t{256}});
      },
      {"'k'", "value 256 does not fit in u8"}));
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::I16, int64_t{-40000}});
      },
      {"does not fit in i16"}));
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::U32, std::string("x")});
      },
      {"not stored as an unsigned integer"}));
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::F32, true});
      },
      {"not stored as a double"}));
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::ARRAY, uint64_t{1}});
      },
      {"array value has no array"}));
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {static_cast<GgufType>(13), uint64_t{1}});
      },
      {"unknown value type id 13"}));
  // A hand-built array bypassing GgufValue::array's check.
  auto mixed = std::make_shared<GgufArray>();
  mixed->element_type = GgufType::U8;
  mixed->elements = {GgufValue::string("x")};
  EXPECT_TRUE(throws_error_with(
      [&] {
        w.set("k", {GgufType::ARRAY, std::shared_ptr<const GgufArray>(mixed)});
      },
      {"array element 0 has type string, expected u8"}));
  // Nesting beyond what the reader accepts.
  GgufValue deep = GgufValue::array(GgufType::U8, {});
  for (int i = 0; i < 40; ++i) deep = GgufValue::array(GgufType::ARRAY, {deep});
  EXPECT_TRUE(throws_error_with([&] { w.set("k", deep); }, {"nested deeper than 32"}));
}

TEST(GgufWriter, DeepestAcceptedNestingRoundTrips) {
  TempDir dir;
  const auto path = dir.file("deep.gguf");
  GgufValue deep = GgufValue::array(GgufType::U8, {GgufValue{GgufType::U8, uint64_t{7}}});
  for (int i = 1; i < 32; ++i) deep = GgufValue::array(GgufType::ARRAY, {deep});
  GgufWriter w;
  w.set("deep", deep);
  w.write(path);
  auto f = GgufFile::open(path);
  EXPECT_TRUE(same_value(*f->find("deep"), deep));
}

TEST(GgufWriter, MoreValuesThanReadersAcceptAreRefused) {
  // Nine keys sharing one array of 2^20 elements: 2^23 + 9 values in the file, little memory.
  TempDir dir;
  const auto path = dir.file("many.gguf");
  const GgufValue big = GgufValue::array(
      GgufType::U8, std::vector<GgufValue>(size_t{1} << 20, GgufValue{GgufType::U8, uint64_t{0}}));
  GgufWriter w;
  for (int i = 0; i < 9; ++i) w.set("k" + std::to_string(i), big);
  EXPECT_TRUE(throws_error_with([&] { w.write(path); },
                                {path.string() + ": ", "more than 8388608 values"}));
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

TEST(GgufWriter, BadTensorsAreRefused) {
  GgufWriter w;
  const auto data = pattern(4096, 1);
  auto add = [&](std::string name, DType t, std::vector<uint64_t> ne, size_t n) {
    return [&w, &data, name, t, ne, n] { w.add_tensor(name, t, ne, data.data(), n); };
  };
  EXPECT_TRUE(
      throws_error_with(add("q", DType::Q8_0, {33}, 34), {"'q'", "not a multiple of the q8_0"}));
  EXPECT_TRUE(throws_error_with(add("z", DType::F32, {4, 0}, 0), {"'z'", "ne[1] is 0"}));
  EXPECT_TRUE(throws_error_with(add("d", DType::F32, {1, 1, 1, 1, 1}, 4), {"n_dims 5"}));
  EXPECT_TRUE(throws_error_with(add("e", DType::F32, {}, 4), {"n_dims 0"}));
  EXPECT_TRUE(throws_error_with(add("n", DType::F32, {4}, 15), {"has 15 bytes", "need 16"}));
  EXPECT_TRUE(
      throws_error_with(add("u", static_cast<DType>(4), {32}, 18), {"unknown tensor type id 4"}));
  EXPECT_TRUE(throws_error_with([&] { w.add_tensor("null", DType::F32, {1}, nullptr, 4); },
                                {"'null'", "no data"}));
  w.add_tensor("ok", DType::F32, {1}, data.data(), 4);
  EXPECT_TRUE(throws_error_with(add("ok", DType::F32, {1}, 4), {"duplicate tensor name 'ok'"}));
}

}  // namespace
}  // namespace hostlm::test
