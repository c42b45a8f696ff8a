// GgufValue accessors and GgufFile's typed getters (any integer width accepted; a wrong
// type is an Error naming the file and the key).
#include <cstdint>
#include <limits>

#include "gguf_test_util.h"

namespace hostlm::test {
namespace {

TEST(GgufValue, Accessors) {
  const GgufValue u8{GgufType::U8, uint64_t{200}};
  EXPECT_TRUE(u8.is_integer());
  EXPECT_FALSE(u8.is_float());
  EXPECT_EQ(u8.as_int(), 200);
  EXPECT_EQ(u8.as_float(), 200.0);
  EXPECT_EQ(u8.as_bool(), std::nullopt);
  EXPECT_EQ(u8.as_string(), nullptr);
  EXPECT_EQ(u8.as_array(), nullptr);

  EXPECT_EQ(GgufValue::i32(-7).as_int(), -7);
  EXPECT_EQ(GgufValue::u64(std::numeric_limits<uint64_t>::max()).as_int(), std::nullopt);
  EXPECT_EQ(GgufValue::u64(std::numeric_limits<uint64_t>::max()).as_float(),
            18446744073709551616.0);
  EXPECT_EQ(GgufValue::f32(0.5f).as_float(), 0.5);
  EXPECT_EQ(GgufValue::f32(0.5f).as_int(), std::nullopt);
  EXPECT_EQ(GgufValue::boolean(true).as_bool(), true);
  EXPECT_EQ(GgufValue::boolean(true).as_int(), std::nullopt);
  EXPECT_EQ(*GgufValue::string("x").as_string(), "x");

  const GgufValue a = GgufValue::array(GgufType::U32, {GgufValue::u32(1), GgufValue::u32(2)});
  ASSERT_NE(a.as_array(), nullptr);
  EXPECT_EQ(a.as_array()->element_type, GgufType::U32);
  EXPECT_EQ(a.as_array()->elements.size(), 2u);

  // Storage that does not match the declared type is never read through.
  const GgufValue mismatched{GgufType::U32, std::string("oops")};
  EXPECT_EQ(mismatched.as_int(), std::nullopt);
  EXPECT_EQ(mismatched.as_string(), nullptr);
}

TEST(GgufValue, ArrayRefusesMixedElementTypes) {
  EXPECT_TRUE(throws_error_with(
      [] {
        GgufValue::array(GgufType::U32, {GgufValue::u32(1), GgufValue::i32(2)});
      },
      {"element 1 has type i32, expected u32"}));
}

class Getters : public ::testing::Test {
 protected:
  void SetUp() override {
    using T = GgufType;
    GgufWriter w;
    w.set("u8", {T::U8, uint64_t{250}});
    w.set("i8", {T::I8, int64_t{-100}});
    w.set("u16", {T::U16, uint64_t{60000}});
    w.set("i16", {T::I16, int64_t{-30000}});
    w.set("u32", GgufValue::u32(4000000000u));
    w.set("i32", GgufValue::i32(-2000000000));
    w.set("u64", GgufValue::u64(1ull << 40));
    w.set("u64_max", GgufValue::u64(std::numeric_limits<uint64_t>::max()));
    w.set("i64", {T::I64, std::numeric_limits<int64_t>::min()});
    w.set("f32", GgufValue::f32(0.25f));
    w.set("f64", {T::F64, 1e-6});
    w.set("bool", GgufValue::boolean(true));
    w.set("string", GgufValue::string("qwen35"));
    w.set("ints", GgufValue::array(
                      T::I16, {GgufValue{T::I16, int64_t{-1}}, GgufValue{T::I16, int64_t{2}}}));
    w.set("u64s", GgufValue::array(T::U64, {GgufValue::u64(1), GgufValue::u64(~0ull)}));
    w.set("no_ints", GgufValue::array(T::U8, {}));
    w.set("strings", GgufValue::array(T::STRING, {GgufValue::string("a"), GgufValue::string("b")}));
    w.set("floats", GgufValue::array(T::F32, {GgufValue::f32(1.0f)}));
    w.set("nested", GgufValue::array(T::ARRAY, {GgufValue::array(T::STRING, {})}));
    path_ = dir_.file("getters.gguf");
    w.write(path_);
    file_ = GgufFile::open(path_);
  }

  // The message names the file and the key.
  template <class F>
  ::testing::AssertionResult wrong(F&& f, std::string_view key, std::string_view problem) {
    const std::string quoted = "'" + std::string(key) + "'";
    return throws_error_with(std::forward<F>(f), {path_.string() + ": ", quoted, problem});
  }

  TempDir dir_;
  std::filesystem::path path_;
  std::unique_ptr<GgufFile> file_;
};

TEST_F(Getters, IntegersOfEveryWidth) {
  const GgufFile& f = *file_;
  EXPECT_EQ(f.get_int("u8"), 250);
  EXPECT_EQ(f.get_int("i8"), -100);
  EXPECT_EQ(f.get_int("u16"), 60000);
  EXPECT_EQ(f.get_int("i16"), -30000);
  EXPECT_EQ(f.get_int("u32"), 4000000000);
  EXPECT_EQ(f.get_int("i32"), -2000000000);
  EXPECT_EQ(f.get_int("u64"), int64_t{1} << 40);
  EXPECT_EQ(f.get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.get_int("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_int("u64_max"); }, "u64_max", "does not fit in int64"));
  EXPECT_TRUE(wrong([&] { f.get_int("f32"); }, "f32", "has type f32, expected an integer"));
  EXPECT_TRUE(wrong([&] { f.get_int("string"); }, "string", "has type string"));
  EXPECT_TRUE(wrong([&] { f.get_int("bool"); }, "bool", "has type bool"));
}

TEST_F(Getters, Floats) {
  const GgufFile& f = *file_;
  EXPECT_EQ(f.get_float("f32"), 0.25);
  EXPECT_EQ(f.get_float("f64"), 1e-6);
  EXPECT_EQ(f.get_float("i8"), -100.0);  // integers are numbers too
  EXPECT_EQ(f.get_float("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_float("string"); }, "string", "expected a number"));
  EXPECT_TRUE(wrong([&] { f.get_float("floats"); }, "floats", "has type array of f32"));
}

TEST_F(Getters, BoolAndString) {
  const GgufFile& f = *file_;
  EXPECT_EQ(f.get_bool("bool"), true);
  EXPECT_EQ(f.get_bool("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_bool("u8"); }, "u8", "has type u8, expected bool"));
  EXPECT_EQ(f.get_string("string"), "qwen35");
  EXPECT_EQ(f.get_string("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_string("i32"); }, "i32", "has type i32, expected string"));
  EXPECT_TRUE(wrong([&] { f.get_string("strings"); }, "strings", "array of string"));
}

TEST_F(Getters, Arrays) {
  const GgufFile& f = *file_;
  EXPECT_EQ(f.get_int_array("ints"), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(f.get_int_array("no_ints"), std::vector<int64_t>{});
  EXPECT_EQ(f.get_int_array("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_int_array("u64s"); }, "u64s", "does not fit in int64"));
  EXPECT_TRUE(
      wrong([&] { f.get_int_array("strings"); }, "strings", "expected an array of integers"));
  EXPECT_TRUE(wrong([&] { f.get_int_array("u32"); }, "u32", "has type u32"));
  EXPECT_EQ(f.get_string_array("strings"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.get_string_array("absent"), std::nullopt);
  EXPECT_TRUE(wrong([&] { f.get_string_array("ints"); }, "ints", "has type array of i16"));
  EXPECT_TRUE(wrong([&] { f.get_string_array("nested"); }, "nested", "array of array"));
  EXPECT_TRUE(
      wrong([&] { f.get_string_array("string"); }, "string", "expected an array of strings"));
}

}  // namespace
}  // namespace hostlm::test
