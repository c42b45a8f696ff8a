// Writer -> reader round trips: every value type (nested arrays included), several tensor
// types, non-default alignments, version 2 files and the layout the spec prescribes.
#include <cmath>
#include <cstdint>
#include <limits>

#include "gguf_test_util.h"

namespace hostlm::test {
namespace {

using Metadata = std::vector<std::pair<std::string, GgufValue>>;

GgufValue u(GgufType t, uint64_t v) { return {t, v}; }
GgufValue s(GgufType t, int64_t v) { return {t, v}; }
GgufValue f64(double v) { return {GgufType::F64, v}; }
GgufValue str(std::string v) { return GgufValue::string(std::move(v)); }
GgufValue arr(GgufType t, std::vector<GgufValue> e) { return GgufValue::array(t, std::move(e)); }

Metadata every_value_type() {
  using T = GgufType;
  return {
      {"general.architecture", str("test")},
      {"t.u8", u(T::U8, 255)},
      {"t.i8", s(T::I8, -128)},
      {"t.u16", u(T::U16, 65535)},
      {"t.i16", s(T::I16, -32768)},
      {"t.u32", u(T::U32, 0xffffffffu)},
      {"t.i32", s(T::I32, std::numeric_limits<int32_t>::min())},
      {"t.f32", GgufValue::f32(-1.5f)},
      {"t.f32_neg_zero", GgufValue::f32(-0.0f)},
      {"t.f32_inf", GgufValue::f32(std::numeric_limits<float>::infinity())},
      {"t.bool_true", GgufValue::boolean(true)},
      {"t.bool_false", GgufValue::boolean(false)},
      {"t.string", str(std::string("h\xc3\xa9llo\0world", 12))},
      {"t.empty_string", str("")},
      {"t.u64", u(T::U64, std::numeric_limits<uint64_t>::max())},
      {"t.i64", s(T::I64, std::numeric_limits<int64_t>::min())},
      {"t.f64", f64(1e300)},
      {"t.f64_nan", f64(std::numeric_limits<double>::quiet_NaN())},
      {"a.u8", arr(T::U8, {u(T::U8, 0), u(T::U8, 1), u(T::U8, 255)})},
      {"a.i8", arr(T::I8, {s(T::I8, -1), s(T::I8, 127)})},
      {"a.u16", arr(T::U16, {u(T::U16, 7), u(T::U16, 65535)})},
      {"a.i16", arr(T::I16, {s(T::I16, -300), s(T::I16, 300)})},
      {"a.u32", arr(T::U32, {u(T::U32, 1), u(T::U32, 2), u(T::U32, 3)})},
      {"a.i32", arr(T::I32, {s(T::I32, -5), s(T::I32, 0), s(T::I32, 5)})},
      {"a.f32", arr(T::F32, {GgufValue::f32(0.25f), GgufValue::f32(-2.0f)})},
      {"a.bool", arr(T::BOOL, {GgufValue::boolean(true), GgufValue::boolean(false)})},
      {"a.string", arr(T::STRING, {str("a"), str(""), str("<|im_start|>")})},
      {"a.u64", arr(T::U64, {u(T::U64, 1ull << 63)})},
      {"a.i64", arr(T::I64, {s(T::I64, -(1ll << 40))})},
      {"a.f64", arr(T::F64, {f64(3.25), f64(-0.0)})},
      {"a.empty_u32", arr(T::U32, {})},
      {"a.of_i32_arrays", arr(T::ARRAY, {arr(T::I32, {s(T::I32, 1), s(T::I32, 2)}), arr(T::I32, {}),
                                         arr(T::I32, {s(T::I32, 3)})})},
      {"a.of_string_arrays",
       arr(T::ARRAY, {arr(T::STRING, {str("x"), str("yz")}), arr(T::STRING, {str("")})})},
      {"a.three_levels",
       arr(T::ARRAY, {arr(T::ARRAY, {arr(T::F64, {f64(1.0), f64(2.0)}), arr(T::F64, {})}),
                      arr(T::ARRAY, {})})},
      {"a.of_empty_arrays", arr(T::ARRAY, {arr(T::BOOL, {}), arr(T::BOOL, {})})},
  };
}

struct TensorSpec {
  std::string name;
  DType type;
  std::vector<uint64_t> ne;
  size_t nbytes;
};

std::vector<TensorSpec> several_tensors() {
  return {
      {"token_embd.weight", DType::F32, {3, 2}, 3 * 2 * 4},
      {"blk.0.attn_norm.weight", DType::F16, {5}, 10},
      {"blk.0.ffn_up.weight", DType::Q8_0, {64, 3}, 2 * 3 * 34},
      {"blk.0.ffn_down.weight", DType::Q4_K, {256, 2}, 2 * 144},
      {"positions", DType::I32, {2, 3, 4}, 2 * 3 * 4 * 4},
      {"four_dims", DType::BF16, {2, 1, 3, 2}, 12 * 2},
      {"odd_bytes", DType::I8, {7}, 7},
  };
}

class RoundTrip : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RoundTrip, EveryValueTypeAndSeveralTensors) {
  const uint64_t alignment = GetParam();
  TempDir dir;
  const auto path = dir.file("model.gguf");
  const Metadata meta = every_value_type();
  const auto specs = several_tensors();
  std::vector<std::vector<unsigned char>> data;
  GgufWriter w(alignment);
  for (const auto& [k, v] : meta) w.set(k, v);
  for (size_t i = 0; i < specs.size(); ++i) {
    data.push_back(pattern(specs[i].nbytes, static_cast<unsigned>(i)));
    w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, data.back().data(), data.back().size());
  }
  w.write(path);

  auto f = GgufFile::open(path);
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), alignment);

  // The writer adds general.alignment only when it differs from the default.
  const size_t extra = alignment == 32 ? 0 : 1;
  ASSERT_EQ(f->metadata().size(), meta.size() + extra);
  for (size_t i = 0; i < meta.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].first, meta[i].first);
    EXPECT_TRUE(same_value(f->metadata()[i].second, meta[i].second)) << meta[i].first;
    ASSERT_NE(f->find(meta[i].first), nullptr);
    EXPECT_TRUE(same_value(*f->find(meta[i].first), meta[i].second)) << meta[i].first;
  }
  if (extra) {
    EXPECT_EQ(f->metadata().back().first, "general.alignment");
    EXPECT_EQ(f->metadata().back().second.type(), GgufType::U32);
    EXPECT_EQ(f->get_int("general.alignment"), static_cast<int64_t>(alignment));
  }
  EXPECT_EQ(f->find("absent"), nullptr);

  ASSERT_EQ(f->tensors().size(), specs.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.type, specs[i].type);
    EXPECT_EQ(t.ne, specs[i].ne);
    EXPECT_EQ(t.nbytes, specs[i].nbytes);
    EXPECT_EQ(t.offset, expected_offset);  // packed in order, each padded to the alignment
    expected_offset += (t.nbytes + alignment - 1) / alignment * alignment;
    EXPECT_EQ(f->find_tensor(t.name), &t);

    const TensorView v = f->view(t);
    EXPECT_EQ(v.name, t.name);
    EXPECT_EQ(v.type, t.type);
    std::vector<int64_t> reversed(t.ne.rbegin(), t.ne.rend());
    EXPECT_EQ(v.shape, reversed);
    ASSERT_EQ(v.nbytes, data[i].size());
    EXPECT_EQ(std::memcmp(v.data, data[i].data(), v.nbytes), 0);
    // The mapping starts on a page boundary, so file alignment is memory alignment.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % alignment, 0u);
  }
  EXPECT_EQ(f->find_tensor("absent"), nullptr);
  // Everything, the last tensor included, is padded to the alignment.
  EXPECT_EQ(std::filesystem::file_size(path) % alignment, 0u);
}

INSTANTIATE_TEST_SUITE_P(Alignments, RoundTrip, ::testing::Values(32, 1, 8, 64, 4096));

TEST(GgufRoundTrip, ShapeIsReversedNe) {
  TempDir dir;
  const auto path = dir.file("shape.gguf");
  const auto data = pattern(4 * 2 * 3 * 5, 1);
  GgufWriter w;
  w.add_tensor("w", DType::F32, {5, 3, 2}, data.data(), data.size());  // 2 x 3 x 5 in torch
  w.write(path);
  auto f = GgufFile::open(path);
  const TensorView v = f->view(f->tensors().at(0));
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(v.rows(), 6);
  EXPECT_EQ(v.cols(), 5);
}

TEST(GgufRoundTrip, EmptyFile) {
  TempDir dir;
  const auto path = dir.file("empty.gguf");
  GgufWriter().write(path);
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f->metadata().empty());
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->alignment(), 32u);
  // magic, version, two counts, padded to 32
  EXPECT_EQ(std::filesystem::file_size(path), 32u);
}

TEST(GgufRoundTrip, MetadataOrderIsKeptAndSetReplacesInPlace) {
  TempDir dir;
  const auto path = dir.file("order.gguf");
  GgufWriter w;
  w.set("z", GgufValue::u32(1));
  w.set("a", GgufValue::u32(2));
  w.set("m", GgufValue::u32(3));
  w.set("a", GgufValue::string("replaced"));
  w.write(path);
  auto f = GgufFile::open(path);
  ASSERT_EQ(f->metadata().size(), 3u);
  EXPECT_EQ(f->metadata()[0].first, "z");
  EXPECT_EQ(f->metadata()[1].first, "a");
  EXPECT_EQ(f->metadata()[2].first, "m");
  EXPECT_EQ(f->get_string("a"), "replaced");
}

TEST(GgufRoundTrip, ExactBytesOfSmallFile) {
  TempDir dir;
  const auto path = dir.file("exact.gguf");
  const float values[2] = {1.0f, -2.0f};
  GgufWriter w;
  w.set("k", GgufValue::u32(7));
  w.add_tensor("t", DType::F32, {2}, values, sizeof values);
  w.write(path);
  Bytes b;
  b.header(3, 1, 1)
      .kv_u32("k", 7)
      .tensor_info("t", {2}, 0, 0)
      .pad_to(32)
      .f32(1.0f)
      .f32(-2.0f)
      .pad_to(32);
  EXPECT_EQ(read_file(path), b.data());
}

TEST(GgufRoundTrip, Version2IsRead) {
  TempDir dir;
  const auto path = dir.file("v2.gguf");
  const auto data = pattern(64 * 34 / 32, 3);
  GgufWriter w;
  w.set("general.name", GgufValue::string("old"));
  w.set("tokens", GgufValue::array(GgufType::STRING, {GgufValue::string("a")}));
  w.add_tensor("q", DType::Q8_0, {64}, data.data(), data.size());
  w.write(path);
  // Version 2 has the same layout as 3 (u64 counts and lengths); only the number differs.
  std::string bytes = read_file(path);
  bytes[4] = 2;
  write_file(path, bytes);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->get_string("general.name"), "old");
  EXPECT_EQ(f->get_string_array("tokens"), std::vector<std::string>{"a"});
  const TensorView v = f->view(*f->find_tensor("q"));
  EXPECT_EQ(std::memcmp(v.data, data.data(), data.size()), 0);
}

TEST(GgufRoundTrip, HandMadeFileWithTensorsOutOfOrder) {
  // Offsets need not follow the order of the infos; gaps between tensors are allowed.
  TempDir dir;
  const auto path = dir.file("unordered.gguf");
  Bytes b;
  b.header(3, 2, 0).tensor_info("late", {4}, 0, 64).tensor_info("early", {2}, 0, 0).pad_to(32);
  b.f32(1).f32(2).zeros(56).f32(3).f32(4).f32(5).f32(6);
  write_file(path, b.data());
  auto f = GgufFile::open(path);
  const TensorView late = f->view(*f->find_tensor("late"));
  const TensorView early = f->view(*f->find_tensor("early"));
  EXPECT_EQ(static_cast<const float*>(late.data)[3], 6.0f);
  EXPECT_EQ(static_cast<const float*>(early.data)[1], 2.0f);
}

TEST(GgufRoundTrip, AlignmentKeyOfAnyIntegerWidthIsAccepted) {
  TempDir dir;
  const auto path = dir.file("align_u64.gguf");
  Bytes b;
  b.header(3, 1, 1).str("general.alignment").u32(static_cast<uint32_t>(GgufType::U64)).u64(16);
  b.tensor_info("t", {4}, 0, 16).pad_to(16).zeros(32);
  write_file(path, b.data());
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->alignment(), 16u);
}

TEST(GgufRoundTrip, ViewRefusesInfoThatIsNotFromTheFile) {
  TempDir dir;
  const auto path = dir.file("view.gguf");
  const auto data = pattern(16, 4);
  GgufWriter w;
  w.add_tensor("t", DType::F32, {4}, data.data(), data.size());
  w.write(path);
  auto f = GgufFile::open(path);
  GgufTensorInfo forged = f->tensors()[0];
  forged.offset = 1 << 20;
  EXPECT_TRUE(throws_error_with([&] { f->view(forged); }, {path.string(), "'t'", "inside"}));
  forged = f->tensors()[0];
  forged.ne = {400};
  forged.nbytes = 1600;
  EXPECT_TRUE(throws_error_with([&] { f->view(forged); }, {path.string(), "'t'"}));
  forged = f->tensors()[0];
  forged.ne = {0};
  EXPECT_TRUE(throws_error_with([&] { f->view(forged); }, {"ne[0] is 0"}));
}

}  // namespace
}  // namespace hostlm::test
