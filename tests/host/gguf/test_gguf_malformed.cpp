// One test per class of malformed input. Each asserts that open() throws hostlm::Error whose
// message names the file and the problem (and, under ASan/UBSan, that nothing else happens).
#include <cstdint>
#include <limits>

#include "gguf/gguf_open.h"
#include "gguf/gguf_parser.h"
#include "gguf_test_util.h"

namespace hostlm::test {
namespace {

constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ8_0 = 8;
constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max();

class Malformed : public ::testing::Test {
 protected:
  // Writes `bytes` and checks the error.
  ::testing::AssertionResult fails(const Bytes& bytes,
                                   std::initializer_list<std::string_view> parts) {
    write_file(path_, bytes.data());
    return open_fails_with(path_, parts);
  }
  ::testing::AssertionResult fails(std::string_view bytes,
                                   std::initializer_list<std::string_view> parts) {
    write_file(path_, bytes);
    return open_fails_with(path_, parts);
  }

  // A valid file with metadata of several types and two tensors, made by the writer.
  std::string valid_file() {
    const auto a = pattern(64 * 2 / 32 * 34, 1);
    const auto b = pattern(3 * 4, 2);
    GgufWriter w;
    w.set("general.architecture", GgufValue::string("qwen35"));
    w.set("n", GgufValue::u32(4));
    w.set("tokens",
          GgufValue::array(GgufType::STRING, {GgufValue::string("a"), GgufValue::string("bc")}));
    w.set("nested", GgufValue::array(GgufType::ARRAY,
                                     {GgufValue::array(GgufType::I32, {GgufValue::i32(1)})}));
    w.add_tensor("q", DType::Q8_0, {64, 2}, a.data(), a.size());
    w.add_tensor("f", DType::F32, {3}, b.data(), b.size());
    const auto p = dir_.file("valid.gguf");
    w.write(p);
    return read_file(p);
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_.file("bad.gguf");
};

TEST_F(Malformed, MissingFile) {
  EXPECT_TRUE(open_fails_with(dir_.file("nope.gguf"), {"cannot open", "No such file"}));
}

TEST_F(Malformed, Directory) { EXPECT_TRUE(open_fails_with(dir_.path(), {"not a regular file"})); }

TEST_F(Malformed, EmptyFile) { EXPECT_TRUE(fails(std::string_view(""), {"truncated", "magic"})); }

TEST_F(Malformed, TruncatedAnywhere) {
  const std::string full = valid_file();
  // Every prefix that cuts into the data must be refused: inside the header, metadata or
  // tensor infos it is a truncation; past them the tensors no longer fit in the file. Only
  // the padding after the last tensor ("f", 12 bytes) may go. Prefixes are parsed from
  // heap copies of their exact size, so ASan sees any read past the end (a mapping would
  // hide it in the rest of the page).
  const size_t data_end = full.size() - 32 + 12;
  for (size_t n = data_end; n <= full.size(); ++n) {
    const std::vector<unsigned char> prefix(full.begin(), full.begin() + static_cast<long>(n));
    EXPECT_NO_THROW(gguf::open_gguf_bytes(prefix, path_)) << n;
  }
  for (size_t n = 0; n < data_end; ++n) {
    const std::vector<unsigned char> prefix(full.begin(), full.begin() + static_cast<long>(n));
    try {
      auto f = gguf::open_gguf_bytes(prefix, path_);
      ADD_FAILURE() << "prefix of " << n << " bytes opened";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path_.string() + ": ", 0), 0u) << msg;
      EXPECT_TRUE(msg.find("truncated") != std::string::npos ||
                  msg.find("outside the file") != std::string::npos)
          << n << ": " << msg;
    }
  }
  // And through a real file.
  write_file(path_, std::string_view(full).substr(0, data_end - 1));
  EXPECT_TRUE(open_fails_with(path_, {"tensor 'f'", "outside the file"}));
}

TEST_F(Malformed, TruncatedInsideMetadataSaysWhere) {
  Bytes b;
  b.header(3, 0, 1).str("general.name").u32(8).u64(100).raw("short");
  EXPECT_TRUE(fails(b, {"truncated", "'general.name'", "string length 100"}));
  Bytes c;
  c.header(3, 0, 1).str("k").u32(4).raw("\x01\x02");
  EXPECT_TRUE(fails(c, {"truncated", "value of key 'k'", "needs 4 bytes"}));
  Bytes d;
  d.header(3, 1, 0).str("a_tensor_name_long_enough").u32(2).u64(4);  // second ne missing
  EXPECT_TRUE(fails(d, {"truncated", "tensor 'a_tensor_name_long_enough'"}));
}

TEST_F(Malformed, BadMagic) {
  Bytes b;
  b.raw("GGML").u32(3).u64(0).u64(0);
  EXPECT_TRUE(fails(b, {"bad magic", "47 47 4d 4c"}));
  std::string file = valid_file();
  file[0] = 'g';
  EXPECT_TRUE(fails(file, {"bad magic"}));
}

TEST_F(Malformed, UnsupportedVersion) {
  Bytes v1;
  v1.header(1, 0, 0);
  EXPECT_TRUE(fails(v1, {"version 1 is not supported"}));
  Bytes v0;
  v0.header(0, 0, 0);
  EXPECT_TRUE(fails(v0, {"unsupported GGUF version 0"}));
  Bytes v4;
  v4.header(4, 0, 0);
  EXPECT_TRUE(fails(v4, {"unsupported GGUF version 4", "2 and 3"}));
  Bytes big_endian;
  big_endian.raw("GGUF").u32(0x03000000).u64(0).u64(0);
  EXPECT_TRUE(fails(big_endian, {"unsupported GGUF version 50331648", "big-endian"}));
}

TEST_F(Malformed, UnknownValueTypeId) {
  Bytes b;
  b.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_TRUE(fails(b, {"key 'k'", "unknown value type id 13"}));
  Bytes c;
  c.header(3, 0, 1).str("k").u32(0xffffffffu).u32(0);
  EXPECT_TRUE(fails(c, {"unknown value type id 4294967295"}));
}

TEST_F(Malformed, UnknownArrayElementTypeId) {
  Bytes b;
  b.header(3, 0, 1).str("arr").u32(9).u32(99).u64(1).u32(0);
  EXPECT_TRUE(fails(b, {"'arr'", "unknown array element value type id 99"}));
  // Inside a nested array too.
  Bytes c;
  c.header(3, 0, 1).str("arr").u32(9).u32(9).u64(1).u32(42).u64(0);
  EXPECT_TRUE(fails(c, {"'arr'", "unknown array element value type id 42"}));
}

TEST_F(Malformed, UnknownTensorTypeId) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {32}, 4, 0).pad_to(32).zeros(128);  // 4 was Q4_2, removed
  EXPECT_TRUE(fails(b, {"tensor 't'", "unknown tensor type id 4"}));
  Bytes c;
  c.header(3, 1, 0).tensor_info("t", {32}, 1000, 0).pad_to(32).zeros(128);
  EXPECT_TRUE(fails(c, {"tensor 't'", "unknown tensor type id 1000"}));
}

TEST_F(Malformed, AbsurdKvCount) {
  Bytes b;
  b.header(3, 0, kHuge).kv_u32("k", 1);
  EXPECT_TRUE(fails(b, {"n_kv 18446744073709551615", "remaining"}));
  Bytes c;
  c.header(3, 0, 2).kv_u32("k", 1);  // plausible count, but the second entry is missing
  EXPECT_TRUE(fails(c, {"n_kv 2", "remaining"}));
}

TEST_F(Malformed, AbsurdTensorCount) {
  Bytes b;
  b.header(3, kHuge, 0);
  EXPECT_TRUE(fails(b, {"n_tensors 18446744073709551615", "remaining"}));
  Bytes c;
  // The header alone would allow one tensor info; the metadata leaves too little room.
  c.header(3, 1, 1).str("key").u32(8).str(std::string(20, 'x'));
  EXPECT_TRUE(fails(c, {"n_tensors 1", "left after the metadata"}));
}

TEST_F(Malformed, AbsurdArrayCount) {
  Bytes b;
  b.header(3, 0, 1).str("arr").u32(9).u32(static_cast<uint32_t>(GgufType::U64)).u64(kHuge / 2);
  b.zeros(64);
  EXPECT_TRUE(fails(b, {"'arr'", "array count 9223372036854775807 of u64", "remaining"}));
  Bytes c;
  c.header(3, 0, 1).str("arr").u32(9).u32(static_cast<uint32_t>(GgufType::STRING)).u64(9);
  c.zeros(64);  // room for 8 empty strings, not 9
  EXPECT_TRUE(fails(c, {"array count 9 of string", "remaining"}));
  Bytes d;
  d.header(3, 0, 1).str("arr").u32(9).u32(static_cast<uint32_t>(GgufType::ARRAY)).u64(1u << 30);
  EXPECT_TRUE(fails(d, {"array count 1073741824 of array"}));
}

TEST_F(Malformed, AbsurdStringLength) {
  Bytes key;
  key.header(3, 0, 1).u64(kHuge).zeros(16);
  EXPECT_TRUE(fails(key, {"key of metadata entry 0", "string length 18446744073709551615"}));
  Bytes value;
  value.header(3, 0, 1).str("k").u32(8).u64(1ull << 40).raw("abc");
  EXPECT_TRUE(fails(value, {"'k'", "string length 1099511627776"}));
  Bytes name;
  name.header(3, 1, 0).u64(kHuge - 7).zeros(40);
  EXPECT_TRUE(fails(name, {"name of tensor info 0", "string length 18446744073709551608"}));
}

TEST_F(Malformed, TooManyMetadataValues) {
  // One-byte values that fit in the file but not in the memory budget. The real budget
  // (2^23) takes half a minute to exhaust under ASan, so this uses the parser's test knob.
  EXPECT_EQ(gguf::kMaxMetadataValues, uint64_t{1} << 23);
  Bytes b;
  b.header(3, 0, 2).kv_u32("n", 1).str("blob").u32(9).u32(0).u64(1000).zeros(1000);
  const auto* p = reinterpret_cast<const unsigned char*>(b.data().data());
  EXPECT_NO_THROW(gguf::parse_gguf({p, b.size()}, "mem.gguf", 1002));
  EXPECT_TRUE(throws_error_with(
      [&] {
        gguf::parse_gguf({p, b.size()}, "mem.gguf", 1001);
      },
      {"mem.gguf: ", "'blob'", "more than 1001 values"}));
}

TEST_F(Malformed, ArraysNestedTooDeep) {
  Bytes b;
  b.header(3, 0, 1).str("deep").u32(9);
  for (int i = 0; i < 100; ++i) b.u32(9).u64(1);
  b.u32(0).u64(0);
  EXPECT_TRUE(fails(b, {"'deep'", "nested deeper than 32"}));
}

TEST_F(Malformed, BoolNotZeroOrOne) {
  Bytes b;
  b.header(3, 0, 1).str("flag").u32(7).u8(2);
  EXPECT_TRUE(fails(b, {"'flag'", "bool byte 2"}));
}

TEST_F(Malformed, NDims) {
  Bytes zero;
  zero.header(3, 1, 0).str("t").u32(0).u32(kF32).u64(0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(zero, {"tensor 't'", "n_dims 0 is out of range"}));
  Bytes five;
  five.header(3, 1, 0).tensor_info("t", {1, 1, 1, 1, 1}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(five, {"tensor 't'", "n_dims 5 is out of range"}));
  Bytes huge;
  huge.header(3, 1, 0).str("t").u32(0xffffffffu).zeros(64);
  EXPECT_TRUE(fails(huge, {"tensor 't'", "n_dims 4294967295"}));
}

TEST_F(Malformed, NeZero) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {4, 0}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(b, {"tensor 't'", "ne[1] is 0"}));
}

TEST_F(Malformed, NeProductOverflows) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {1ull << 32, 1ull << 32}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(b, {"tensor 't'", "element count overflows"}));
  Bytes c;  // fits in u64 elements but not in int64 (TensorView's shape type)
  c.header(3, 1, 0).tensor_info("t", {1ull << 32, 1ull << 31}, 24, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(c, {"tensor 't'", "element count overflows"}));
  Bytes d;  // elements fit, bytes do not
  d.header(3, 1, 0).tensor_info("t", {1ull << 62}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(d, {"tensor 't'", "overflows"}));
}

TEST_F(Malformed, Ne0NotMultipleOfBlockSize) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {33, 2}, kQ8_0, 0).pad_to(32).zeros(256);
  EXPECT_TRUE(fails(b, {"tensor 't'", "ne[0] = 33 is not a multiple of the q8_0 block size 32"}));
}

TEST_F(Malformed, TensorOffsetNotAligned) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {4}, kF32, 4).pad_to(32).zeros(64);
  EXPECT_TRUE(fails(b, {"tensor 't'", "offset 4 is not a multiple of the alignment 32"}));
  Bytes c;  // with a custom alignment
  c.header(3, 1, 1).kv_u32("general.alignment", 64).tensor_info("t", {4}, kF32, 32).pad_to(64);
  c.zeros(128);
  EXPECT_TRUE(fails(c, {"offset 32 is not a multiple of the alignment 64"}));
}

TEST_F(Malformed, TensorDataOutsideFile) {
  Bytes b;
  b.header(3, 1, 0).tensor_info("t", {4}, kF32, 0).pad_to(32).zeros(15);  // needs 16
  EXPECT_TRUE(fails(b, {"tensor 't'", "outside the file"}));
  Bytes c;
  c.header(3, 1, 0).tensor_info("t", {4}, kF32, 1ull << 40).pad_to(32).zeros(16);
  EXPECT_TRUE(fails(c, {"tensor 't'", "outside the file"}));
  Bytes d;  // offset + size wraps around 2^64
  d.header(3, 1, 0).tensor_info("t", {8}, kF32, kHuge - 31).pad_to(32).zeros(32);
  EXPECT_TRUE(fails(d, {"tensor 't'", "outside the file"}));
  Bytes e;  // the file ends before the data section even starts
  e.header(3, 1, 0).tensor_info("t", {1}, kF32, 0);
  EXPECT_TRUE(fails(e, {"tensor 't'", "outside the file"}));
}

TEST_F(Malformed, DuplicateTensorNames) {
  Bytes b;
  b.header(3, 2, 0).tensor_info("t", {4}, kF32, 0).tensor_info("t", {4}, kF32, 32).pad_to(32);
  b.zeros(64);
  EXPECT_TRUE(fails(b, {"duplicate tensor name 't'"}));
}

TEST_F(Malformed, DuplicateKeys) {
  Bytes b;
  b.header(3, 0, 3).kv_u32("a", 1).kv_string("b", "x").kv_u32("a", 2);
  EXPECT_TRUE(fails(b, {"duplicate key 'a'"}));
}

TEST_F(Malformed, OverlappingTensors) {
  Bytes b;  // "a" covers bytes 0..64, "b" starts at 32
  b.header(3, 2, 0).tensor_info("a", {16}, kF32, 0).tensor_info("b", {4}, kF32, 32).pad_to(32);
  b.zeros(96);
  EXPECT_TRUE(fails(b, {"tensors 'a'", "'b'", "overlap"}));
  Bytes c;  // same offset, listed in reverse order
  c.header(3, 2, 0).tensor_info("x", {4}, kF32, 32).tensor_info("y", {4}, kF32, 32).pad_to(32);
  c.zeros(64);
  EXPECT_TRUE(fails(c, {"overlap"}));
}

TEST_F(Malformed, BadAlignment) {
  Bytes zero;
  zero.header(3, 0, 1).kv_u32("general.alignment", 0);
  EXPECT_TRUE(fails(zero, {"general.alignment = 0 is not a nonzero power of two"}));
  Bytes three;
  three.header(3, 0, 1).kv_u32("general.alignment", 3);
  EXPECT_TRUE(fails(three, {"general.alignment = 3 is not a nonzero power of two"}));
  Bytes negative;
  negative.header(3, 0, 1).str("general.alignment").u32(5).u32(static_cast<uint32_t>(-32));
  EXPECT_TRUE(fails(negative, {"general.alignment = -32"}));
  Bytes text;
  text.header(3, 0, 1).kv_string("general.alignment", "32");
  EXPECT_TRUE(fails(text, {"general.alignment has type string, expected an integer"}));
}

TEST_F(Malformed, UnprintableNamesAreEscapedInMessages) {
  Bytes b;
  b.header(3, 0, 2)
      .kv_u32(std::string_view("a\n\x01", 3), 1)
      .kv_u32(std::string_view("a\n\x01", 3), 1);
  EXPECT_TRUE(fails(b, {"duplicate key 'a\\x0a\\x01'"}));
}

TEST_F(Malformed, EveryCorruptedByteIsHandled) {
  // Not a class of its own: flipping each byte of a valid file must either still open or
  // throw hostlm::Error naming the file, never crash (ASan/UBSan watch the rest).
  const std::string full = valid_file();
  for (size_t i = 0; i < full.size(); ++i) {
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      std::vector<unsigned char> bad(full.begin(), full.end());
      bad[i] = static_cast<unsigned char>(bad[i] ^ x);
      try {
        auto f = gguf::open_gguf_bytes(bad, path_);
        for (const auto& t : f->tensors()) f->view(t);
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path_.string() + ": ", 0), 0u) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace hostlm::test
