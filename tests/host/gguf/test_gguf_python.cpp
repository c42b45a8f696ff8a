// Cross-check against the reference implementation, the `gguf` Python package: a file it
// writes reads identically here, and a file written here reads identically there. Values on
// both sides are spelled out in gguf_py_crosscheck.py; keep the two in step.
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <limits>

#include "gguf_test_util.h"

namespace hostlm::test {
namespace {

std::filesystem::path script_path() {
  if (const char* src = std::getenv("HOSTLM_SOURCE_DIR"))
    return std::filesystem::path(src) / "tests/host/gguf/gguf_py_crosscheck.py";
  return std::filesystem::path(__FILE__).parent_path() / "gguf_py_crosscheck.py";
}

bool python_gguf_available() {
  return std::system("python3 -c 'import gguf, numpy' >/dev/null 2>&1") == 0;
}

// Runs the script; returns its exit status and fills `output` with what it printed.
int run_script(const std::string& mode, const std::filesystem::path& file,
               const std::filesystem::path& log, std::string& output) {
  const std::string cmd = "python3 '" + script_path().string() + "' " + mode + " '" +
                          file.string() + "' >'" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  output = read_file(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class GgufPython : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!python_gguf_available()) GTEST_SKIP() << "python3 with the gguf package not available";
  }
  TempDir dir_;
};

std::vector<GgufValue> i32s(std::initializer_list<int32_t> v) {
  std::vector<GgufValue> out;
  for (int32_t x : v) out.push_back(GgufValue::i32(x));
  return out;
}

std::vector<GgufValue> strs(std::initializer_list<const char*> v) {
  std::vector<GgufValue> out;
  for (const char* x : v) out.push_back(GgufValue::string(x));
  return out;
}

TEST_F(GgufPython, GgufPyWriterIsReadByHostlm) {
  using T = GgufType;
  const auto path = dir_.file("from_python.gguf");
  std::string output;
  ASSERT_EQ(run_script("write", path, dir_.file("log.txt"), output), 0) << output;
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 64u);

  const std::vector<std::pair<std::string, GgufValue>> expected = {
      {"general.architecture", GgufValue::string("crosscheck")},
      {"general.alignment", GgufValue::u32(64)},
      {"py.u8", {T::U8, uint64_t{200}}},
      {"py.i8", {T::I8, int64_t{-100}}},
      {"py.u16", {T::U16, uint64_t{65000}}},
      {"py.i16", {T::I16, int64_t{-32000}}},
      {"py.u32", GgufValue::u32(4000000000u)},
      {"py.i32", GgufValue::i32(-2000000000)},
      {"py.f32", GgufValue::f32(0.15625f)},
      {"py.u64", GgufValue::u64((uint64_t{1} << 63) + 5)},
      {"py.i64", {T::I64, -(int64_t{1} << 62)}},
      {"py.f64", {T::F64, -1.0e-300}},
      {"py.true", GgufValue::boolean(true)},
      {"py.false", GgufValue::boolean(false)},
      {"py.string", GgufValue::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93")},
      {"py.strings", GgufValue::array(T::STRING, strs({"a", "bb", "<|im_end|>"}))},
      {"py.ints", GgufValue::array(T::I32, i32s({1, -2, 3}))},
      {"py.floats", GgufValue::array(T::F32, {GgufValue::f32(0.5f), GgufValue::f32(-1.25f)})},
      {"py.bools", GgufValue::array(T::BOOL, {GgufValue::boolean(true), GgufValue::boolean(false),
                                              GgufValue::boolean(true)})},
      {"py.u8s",
       GgufValue::array(T::U8, {GgufValue{T::U8, uint64_t{1}}, GgufValue{T::U8, uint64_t{2}},
                                GgufValue{T::U8, uint64_t{255}}})},
      {"py.u64s", GgufValue::array(T::U64, {GgufValue::u64(~uint64_t{0}), GgufValue::u64(0)})},
      {"py.f64s", GgufValue::array(T::F64, {GgufValue{T::F64, 1.5}, GgufValue{T::F64, -2.5}})},
      {"py.nested", GgufValue::array(T::ARRAY, {GgufValue::array(T::I32, i32s({1, 2})),
                                                GgufValue::array(T::I32, i32s({3})),
                                                GgufValue::array(T::I32, i32s({4, 5, 6}))})},
      {"py.nested_strings",
       GgufValue::array(T::ARRAY, {GgufValue::array(T::STRING, strs({"a"})),
                                   GgufValue::array(T::STRING, strs({"b", "c"}))})},
      {"py.three_levels",
       GgufValue::array(
           T::ARRAY,
           {GgufValue::array(T::ARRAY, {GgufValue::array(T::F32, {GgufValue::f32(1.5f)})}),
            GgufValue::array(T::ARRAY, {GgufValue::array(T::F32, {GgufValue::f32(2.5f),
                                                                  GgufValue::f32(3.5f)})})})},
  };
  ASSERT_EQ(f->metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f->metadata()[i].first, expected[i].first);
    EXPECT_TRUE(same_value(f->metadata()[i].second, expected[i].second)) << expected[i].first;
  }

  ASSERT_EQ(f->tensors().size(), 4u);
  {
    const TensorView v = f->view(*f->find_tensor("f32"));
    EXPECT_EQ(v.type, DType::F32);
    EXPECT_EQ(v.shape, (std::vector<int64_t>{3, 4}));
    ASSERT_EQ(v.nbytes, 48u);
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(static_cast<const float*>(v.data)[i], static_cast<float>(i) * 0.5f - 1.0f);
  }
  {
    const TensorView v = f->view(*f->find_tensor("f16"));
    EXPECT_EQ(v.type, DType::F16);
    EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 5}));
    ASSERT_EQ(v.nbytes, 20u);
    for (int i = 0; i < 10; ++i) {
      uint16_t bits = 0;
      std::memcpy(&bits, static_cast<const char*>(v.data) + 2 * i, 2);
      EXPECT_EQ(bits, 3 * i + 0x3C00);
    }
  }
  {
    const TensorView v = f->view(*f->find_tensor("q8_0"));
    EXPECT_EQ(v.type, DType::Q8_0);
    EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 64}));
    const auto want = pattern(2 * 2 * 34, 8);
    ASSERT_EQ(v.nbytes, want.size());
    EXPECT_EQ(std::memcmp(v.data, want.data(), want.size()), 0);
  }
  {
    const TensorView v = f->view(*f->find_tensor("i32"));
    EXPECT_EQ(v.type, DType::I32);
    EXPECT_EQ(v.shape, (std::vector<int64_t>{3}));
    const int32_t want[3] = {-1, 0, 7};
    ASSERT_EQ(v.nbytes, sizeof want);
    EXPECT_EQ(std::memcmp(v.data, want, sizeof want), 0);
  }
  for (const GgufTensorInfo& t : f->tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
}

TEST_F(GgufPython, HostlmWriterIsReadByGgufPy) {
  using T = GgufType;
  const auto path = dir_.file("from_hostlm.gguf");
  GgufWriter w(64);
  w.set("general.architecture", GgufValue::string("crosscheck"));
  w.set("cpp.u8", {T::U8, uint64_t{250}});
  w.set("cpp.i8", {T::I8, int64_t{-7}});
  w.set("cpp.u16", {T::U16, uint64_t{60000}});
  w.set("cpp.i16", {T::I16, int64_t{-30000}});
  w.set("cpp.u32", GgufValue::u32(4000000000u));
  w.set("cpp.i32", GgufValue::i32(-2000000000));
  w.set("cpp.f32", GgufValue::f32(0.1f));
  w.set("cpp.bool", GgufValue::boolean(true));
  w.set("cpp.string", GgufValue::string("<|im_start|>assistant \xe2\x9c\x93"));
  w.set("cpp.u64", GgufValue::u64(std::numeric_limits<uint64_t>::max()));
  w.set("cpp.i64", {T::I64, std::numeric_limits<int64_t>::min()});
  w.set("cpp.f64", {T::F64, 0.1});
  w.set("cpp.tokens", GgufValue::array(T::STRING, strs({"a", "", "\xc3\xa9"})));
  w.set("cpp.scores", GgufValue::array(T::F32, {GgufValue::f32(-1.0f), GgufValue::f32(0.5f)}));
  w.set("cpp.types", GgufValue::array(T::I32, i32s({1, 3, 6})));
  w.set("cpp.flags",
        GgufValue::array(T::BOOL, {GgufValue::boolean(false), GgufValue::boolean(true)}));
  w.set("cpp.u64s", GgufValue::array(T::U64, {GgufValue::u64(~uint64_t{0})}));
  w.set("cpp.nested", GgufValue::array(T::ARRAY, {GgufValue::array(T::I32, i32s({1, 2})),
                                                  GgufValue::array(T::I32, {}),
                                                  GgufValue::array(T::I32, i32s({3}))}));
  w.set("cpp.nested_strings",
        GgufValue::array(T::ARRAY, {GgufValue::array(T::STRING, strs({"x"})),
                                    GgufValue::array(T::STRING, strs({"y", "z"}))}));
  // name, type, ne, bytes, pattern seed: as EXPECTED_TENSORS in the script.
  struct Spec {
    const char* name;
    DType type;
    std::vector<uint64_t> ne;
    size_t nbytes;
    unsigned seed;
  };
  const std::vector<Spec> specs = {
      {"w_f32", DType::F32, {4, 3}, 48, 1},     {"w_f16", DType::F16, {8}, 16, 2},
      {"w_q8_0", DType::Q8_0, {64, 2}, 136, 3}, {"w_q4_k", DType::Q4_K, {256}, 144, 4},
      {"w_i32", DType::I32, {2, 2, 2}, 32, 5},
  };
  std::vector<std::vector<unsigned char>> data;
  data.reserve(specs.size());
  for (const Spec& s : specs) {
    data.push_back(pattern(s.nbytes, s.seed));
    w.add_tensor(s.name, s.type, s.ne, data.back().data(), data.back().size());
  }
  w.write(path);

  std::string output;
  EXPECT_EQ(run_script("read", path, dir_.file("log.txt"), output), 0) << output;
  EXPECT_EQ(output, "OK\n");
}

}  // namespace
}  // namespace hostlm::test
