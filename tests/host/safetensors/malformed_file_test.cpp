// One malformed safetensors image per test; each error must name the file and the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hostlm/safetensors.h"
#include "st_test_util.h"

namespace hostlm {
namespace {

using st_test::error_of;
using st_test::names;
using st_test::safetensors_bytes;
using st_test::TempDir;
using st_test::u64_le;
using st_test::write_file;

class MalformedFile : public ::testing::Test {
 protected:
  // Writes `bytes` as a .safetensors file and returns the message SafetensorsFile::open throws.
  std::string open_error(const std::string& bytes) {
    write_file(path_, bytes);
    return error_of([&] { SafetensorsFile::open(path_); });
  }
  std::unique_ptr<SafetensorsFile> open_ok(const std::string& bytes) {
    write_file(path_, bytes);
    return SafetensorsFile::open(path_);
  }

  TempDir dir_;
  std::filesystem::path path_ = dir_ / "bad.safetensors";
};

std::string f32(const std::string& shape, uint64_t begin, uint64_t end) {
  return R"({"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[)" + std::to_string(begin) +
         "," + std::to_string(end) + "]}";
}

TEST_F(MalformedFile, MissingFile) {
  EXPECT_TRUE(names(error_of([&] { SafetensorsFile::open(path_); }), path_, "cannot open"));
}

TEST_F(MalformedFile, Directory) {
  std::filesystem::create_directory(path_);
  EXPECT_TRUE(names(error_of([&] { SafetensorsFile::open(path_); }), path_, "not a regular file"));
}

TEST_F(MalformedFile, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  EXPECT_TRUE(names(error_of([&] { SafetensorsFile::open(path_); }), path_, "not a regular file"));
}

TEST_F(MalformedFile, Empty) { EXPECT_TRUE(names(open_error(""), path_, "too short")); }

TEST_F(MalformedFile, TruncatedHeaderLength) {
  EXPECT_TRUE(names(open_error(u64_le(2).substr(0, 5)), path_,
                    "5 bytes is too short for the 8-byte header length"));
}

TEST_F(MalformedFile, HeaderLengthBeyondFile) {
  EXPECT_TRUE(names(open_error(u64_le(1000) + "{}"), path_,
                    "header length 1000 exceeds the file (2 bytes after the length field)"));
}

TEST_F(MalformedFile, HeaderLengthOverLimit) {
  EXPECT_TRUE(names(open_error(u64_le(uint64_t{1} << 40) + "{}"), path_,
                    "header length 1099511627776 exceeds the limit"));
  EXPECT_TRUE(names(open_error(u64_le(~uint64_t{0}) + "{}"), path_, "exceeds the limit"));
}

TEST_F(MalformedFile, InvalidJson) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"a": )")), path_, "invalid JSON header"));
  EXPECT_TRUE(names(open_error(safetensors_bytes("")), path_, "invalid JSON header"));
  EXPECT_TRUE(names(open_error(safetensors_bytes("{\"\xff\": 1}")), path_, "invalid JSON header"));
}

TEST_F(MalformedFile, NonObjectJson) {
  EXPECT_TRUE(names(open_error(safetensors_bytes("[1, 2]")), path_,
                    "header is not a JSON object (got array)"));
  EXPECT_TRUE(names(open_error(safetensors_bytes("42")), path_, "not a JSON object (got number)"));
}

TEST_F(MalformedFile, DeeplyNestedJson) {
  const std::string deep =
      R"({"__metadata__":)" + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_TRUE(names(open_error(safetensors_bytes(deep)), path_, "nested deeper than"));
}

TEST_F(MalformedFile, DuplicateTensorName) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(
                        R"({"w":)" + f32("[1]", 0, 4) + R"(,"w":)" + f32("[1]", 4, 8) + "}",
                        std::string(8, '\0'))),
                    path_, "duplicate key 'w'"));
}

TEST_F(MalformedFile, EntryNotAnObject) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w": [1]})")), path_,
                    "tensor 'w': entry is not an object"));
}

TEST_F(MalformedFile, MissingFields) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w":{"shape":[],"data_offsets":[0,4]}})")),
                    path_, "tensor 'w': missing or non-string \"dtype\""));
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})")),
                    path_, "tensor 'w': missing or non-array \"shape\""));
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[]}})")), path_,
                    "tensor 'w': \"data_offsets\" must be [begin, end]"));
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4,8]}})")),
      path_, "tensor 'w': \"data_offsets\" must be [begin, end]"));
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[-4,0]}})")),
      path_, "tensor 'w': \"data_offsets\" must be non-negative integers"));
}

TEST_F(MalformedFile, BadDtype) {
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(
                R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'))),
            path_, "tensor 'w': unknown dtype 'F17'"));
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(
                R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0'))),
            path_, "unknown dtype 'f32'"));
}

TEST_F(MalformedFile, ControlCharactersInNamesAreEscaped) {
  // A NUL would end the message at what(), hiding the rest of it.
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"a\u0000b\n":{"dtype":"Q4"}})")), path_,
                    R"(tensor 'a\x00b\x0a': unknown dtype 'Q4')"));
}

TEST_F(MalformedFile, HugeNamesAndShapesAreCutShortInMessages) {
  const std::string long_name(100000, 'n');
  std::string msg = open_error(safetensors_bytes(R"({")" + long_name + R"(":{"dtype":"Q4"}})"));
  EXPECT_TRUE(names(msg, path_, "nnn'...: unknown dtype 'Q4'"));
  EXPECT_LT(msg.size(), 1000u);
  std::string shape = "[1";
  for (int i = 0; i < 100000; ++i) shape += ",1";
  msg = open_error(safetensors_bytes(R"({"w":)" + f32(shape + "]", 0, 8) + "}", std::string(8, 0)));
  EXPECT_TRUE(names(msg, path_, "... (100001 dimensions)] of dtype F32 needs 4 bytes"));
  EXPECT_LT(msg.size(), 1000u);
  msg = open_error(safetensors_bytes("{\"" + long_name));
  EXPECT_TRUE(names(msg, path_, "invalid JSON header"));
  EXPECT_LT(msg.size(), 1000u);
}

TEST_F(MalformedFile, ShapeOffsetSizeMismatch) {
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":)" + f32("[2, 3]", 0, 20) + "}", std::string(24, '\0'))),
      path_,
      "tensor 'w': shape [2, 3] of dtype F32 needs 24 bytes but data_offsets [0, "
      "20] span 20"));
}

TEST_F(MalformedFile, OffsetsOutsideFile) {
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":)" + f32("[2, 3]", 0, 24) + "}", std::string(16, '\0'))),
      path_, "tensor 'w': data_offsets [0, 24] lie outside the data area of 16 bytes"));
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(
                R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551615,3]}})")),
            path_, "end before they begin"));
}

TEST_F(MalformedFile, OffsetsReversed) {
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":)" + f32("[1]", 8, 4) + "}", std::string(16, '\0'))),
      path_, "tensor 'w': data_offsets [8, 4] end before they begin"));
}

TEST_F(MalformedFile, OverlappingTensors) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(
                        R"({"a":)" + f32("[4]", 0, 16) + R"(,"b":)" + f32("[4]", 8, 24) + "}",
                        std::string(24, '\0'))),
                    path_, "tensors 'a' [0, 16] and 'b' [8, 24] overlap"));
  // Same range twice, and one tensor nested inside another.
  EXPECT_TRUE(names(open_error(safetensors_bytes(
                        R"({"a":)" + f32("[2]", 0, 8) + R"(,"b":)" + f32("[2]", 0, 8) + "}",
                        std::string(8, '\0'))),
                    path_, "overlap"));
  EXPECT_TRUE(names(open_error(safetensors_bytes(
                        R"({"a":)" + f32("[1]", 4, 8) + R"(,"b":)" + f32("[4]", 0, 16) + "}",
                        std::string(16, '\0'))),
                    path_, "tensors 'b' [0, 16] and 'a' [4, 8] overlap"));
}

TEST_F(MalformedFile, NegativeShape) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w":)" + f32("[-1, 4]", 0, 16) + "}",
                                                 std::string(16, '\0'))),
                    path_, "tensor 'w': negative dimension -1 in shape"));
}

TEST_F(MalformedFile, NonIntegerShape) {
  EXPECT_TRUE(names(
      open_error(safetensors_bytes(R"({"w":)" + f32("[2.5]", 0, 8) + "}", std::string(8, '\0'))),
      path_, "tensor 'w': shape entry 2.5 is not a non-negative integer"));
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"w":)" + f32("[\"2\"]", 0, 8) + "}")), path_,
                    "is not a non-negative integer"));
}

TEST_F(MalformedFile, HugeShape) {
  // Each dimension fits, the product overflows 64 bits (and would wrap to 0).
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(R"({"w":)" + f32("[4294967296, 4294967296]", 0, 0) + "}")),
            path_, "tensor 'w': shape [4294967296, 4294967296] has too many elements"));
  // Fits int64 elements but not as bits.
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(R"({"w":)" + f32("[9223372036854775807]", 0, 0) + "}")),
            path_, "has too many elements"));
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(R"({"w":)" + f32("[18446744073709551615]", 0, 0) + "}")),
            path_, "tensor 'w': dimension 18446744073709551615 is too large"));
}

TEST_F(MalformedFile, BadMetadata) {
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"__metadata__": ["pt"]})")), path_,
                    "\"__metadata__\" is not an object"));
  EXPECT_TRUE(names(open_error(safetensors_bytes(R"({"__metadata__": {"format": 1}})")), path_,
                    "\"__metadata__\" value of 'format' is not a string"));
}

TEST_F(MalformedFile, PackedDtypeMustFillWholeBytes) {
  EXPECT_TRUE(
      names(open_error(safetensors_bytes(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})",
                                         std::string(2, '\0'))),
            path_, "shape [3] of dtype F4 is not a whole number of bytes"));
}

// Not malformed: the edge cases a valid file may contain.
TEST_F(MalformedFile, ValidEdgeCasesAreAccepted) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("scalar":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
      R"("empty":{"dtype":"BF16","shape":[0,4096],"data_offsets":[2,2]},)"
      R"("huge_but_empty":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[4,4]},)"
      R"("i64":{"dtype":"I64","shape":[1],"data_offsets":[8,16]},)"
      R"("fp8":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[16,20]},)"
      R"("nibbles":{"dtype":"F4","shape":[4],"data_offsets":[20,22]}})";
  // Padding with spaces is how writers align the data area.
  const auto f = open_ok(safetensors_bytes(header + "    ", std::string(22, '\x01')));
  EXPECT_EQ(f->metadata(), nlohmann::json({{"format", "pt"}}));
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->tensors()[0].name, "empty");
  EXPECT_EQ(f->tensors()[0].nbytes, 0u);
  EXPECT_EQ(f->tensors()[1].name, "huge_but_empty");
  EXPECT_EQ(f->tensors()[2].name, "i64");
  EXPECT_EQ(f->tensors()[2].type, DType::I64);
  EXPECT_EQ(f->find("scalar")->shape, std::vector<int64_t>{});
  EXPECT_EQ(f->find("scalar")->n_elements(), 1);
  EXPECT_TRUE(names(error_of([&] { f->find("fp8"); }), path_,
                    "tensor 'fp8' has dtype F8_E4M3, which hostlm does not support"));
  EXPECT_TRUE(names(error_of([&] { f->find("nibbles"); }), path_, "tensor 'nibbles' has dtype F4"));
  EXPECT_EQ(f->find("missing"), nullptr);
}

TEST_F(MalformedFile, EmptyHeaderObjectIsAnEmptyFile) {
  const auto f = open_ok(safetensors_bytes("{}"));
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_TRUE(f->metadata().is_object());
  EXPECT_TRUE(f->metadata().empty());
}

}  // namespace
}  // namespace hostlm
