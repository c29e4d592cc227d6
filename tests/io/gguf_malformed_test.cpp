// Malformed GGUF files: each kind of corruption, made from a small valid file, gives a specific error
// naming the field and its offset; nothing crashes (run under the asan preset too).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <random>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "io_test_util.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

using test::Contains;

constexpr const char* kName = "sample.gguf";

// A small valid file: five metadata pairs (string, u32 alignment, u32, f32 array, string array) and
// three tensors "a" F32 [32, 2], "b" Q8_0 [64, 2], "c" Q4_0 [32].
std::vector<uint8_t> MakeSample() {
  const std::string path = test::TempDir() + "/sample.gguf";
  auto w = GgufWriter::Create(path);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE(w->AddString("general.architecture", "gemma3").ok());
  EXPECT_TRUE(w->AddU32("general.alignment", 32).ok());
  EXPECT_TRUE(w->AddU32("test.aaa", 7).ok());
  EXPECT_TRUE(w->AddF32Array("test.bbb", {1, 2, 3}).ok());
  EXPECT_TRUE(w->AddStringArray("test.ccc", {"x", "yz", "w"}).ok());
  EXPECT_TRUE(w->DeclareTensor("a", DType::kF32, {32, 2}).ok());
  EXPECT_TRUE(w->DeclareTensor("b", DType::kQ8_0, {64, 2}).ok());
  EXPECT_TRUE(w->DeclareTensor("c", DType::kQ4_0, {32}).ok());
  for (const auto& [name, n] : {std::pair<const char*, size_t>{"a", 256}, {"b", 136}, {"c", 18}}) {
    std::vector<uint8_t> data(n, 0x11);
    EXPECT_TRUE(w->WriteTensorData(name, data.data(), n).ok());
  }
  EXPECT_TRUE(w->Finish().ok());
  auto s = ReadFileToString(path);
  EXPECT_TRUE(s.ok());
  return std::vector<uint8_t>(s->begin(), s->end());
}

void PutU32(std::vector<uint8_t>& b, uint64_t off, uint32_t v) { std::memcpy(b.data() + off, &v, 4); }
void PutU64(std::vector<uint8_t>& b, uint64_t off, uint64_t v) { std::memcpy(b.data() + off, &v, 8); }

// Offsets of the sample's fields, found with the reader itself.
struct Layout {
  uint64_t kv_key[5];    // each key's u64 length
  uint64_t kv_type[5];   // each value's u32 type
  uint64_t kv_value[5];  // each value
  uint64_t t_name[3];    // each tensor's name length
  uint64_t t_ndims[3];
  uint64_t t_type[3];
  uint64_t t_offset[3];
  uint64_t data_end;     // end of the last tensor's data (the rest is padding)
};

Layout Locate(const std::vector<uint8_t>& b) {
  auto f = GgufFile::FromMemory(b.data(), b.size(), kName);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  Layout l{};
  for (size_t i = 0; i < 5; ++i) {
    const GgufKeyValue& kv = f->metadata()[i];
    l.kv_key[i] = kv.offset;
    l.kv_type[i] = kv.offset + 8 + kv.key.size();
    l.kv_value[i] = kv.value.offset;
  }
  for (size_t i = 0; i < 3; ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    l.t_name[i] = t.info_offset;
    l.t_ndims[i] = t.info_offset + 8 + t.name.size();
    l.t_type[i] = l.t_ndims[i] + 4 + 8 * t.n_dims;
    l.t_offset[i] = l.t_type[i] + 4;
  }
  const GgufTensorInfo& last = f->tensors()[2];
  l.data_end = f->data_offset() + last.offset + last.n_bytes;
  return l;
}

// Parses `b` (vectors built by copy hold exactly their size, so ASan sees any read past the end).
Result<GgufFile> Parse(const std::vector<uint8_t>& b) {
  return GgufFile::FromMemory(b.empty() ? nullptr : b.data(), b.size(), kName);
}

void ExpectError(const std::vector<uint8_t>& b, ErrorCode code, std::initializer_list<std::string> parts) {
  auto f = Parse(b);
  ASSERT_FALSE(f.ok()) << "parsed a corrupt file";
  const Status& s = f.status();
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), std::string(kName) + ": ")) << s.ToString();
  for (const std::string& p : parts) EXPECT_TRUE(Contains(s.message(), p)) << s.ToString() << "\n  wanted: " << p;
}

class GgufMalformed : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = MakeSample();
    l_ = Locate(good_);
    b_ = good_;
  }
  std::vector<uint8_t> good_, b_;
  Layout l_;
};

TEST_F(GgufMalformed, SampleIsValid) {
  auto f = Parse(good_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->tensors().size(), 3u);
  EXPECT_TRUE(ParseGgufFromMemory(good_.data(), good_.size()).ok());
}

TEST_F(GgufMalformed, EveryTruncationFails) {
  for (size_t n = 0; n < good_.size(); ++n) {
    const std::vector<uint8_t> prefix(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = Parse(prefix);
    if (n >= l_.data_end) {  // only the last tensor's padding is missing: still a valid file
      EXPECT_TRUE(f.ok()) << n << ": " << f.status().ToString();
      continue;
    }
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(f.status().code(), ErrorCode::kCorruptFile) << f.status().ToString();
    EXPECT_TRUE(Contains(f.status().message(), " at offset ")) << f.status().ToString();
    const std::string& m = f.status().message();
    if (n < l_.t_offset[2] + 8) {  // inside the header: a field, a string or a count does not fit
      EXPECT_TRUE(Contains(m, "truncated") || Contains(m, "run past the end") || Contains(m, "runs past the end") ||
                  Contains(m, "cannot fit"))
          << n << ": " << m;
    } else {  // inside the data section
      EXPECT_TRUE(Contains(m, "offset at offset") && Contains(m, "runs past the end")) << n << ": " << m;
    }
  }
  ExpectError({}, ErrorCode::kCorruptFile, {"magic at offset 0", "too short"});
  ExpectError(std::vector<uint8_t>(good_.begin(), good_.begin() + 6), ErrorCode::kCorruptFile,
              {"version at offset 4: file truncated: needs 4 bytes but only 2 remain"});
  ExpectError(std::vector<uint8_t>(good_.begin(), good_.begin() + 30), ErrorCode::kCorruptFile,
              {"metadata_kv_count at offset 16", "5 key-value pairs cannot fit in the 6 bytes"});
}

TEST_F(GgufMalformed, Magic) {
  b_[0] = 'X';
  ExpectError(b_, ErrorCode::kCorruptFile, {"magic at offset 0", "found \"XGUF\"", "not a GGUF file"});
  b_[1] = 0;
  b_[2] = 0xfe;
  ExpectError(b_, ErrorCode::kCorruptFile, {"found \"X\\x00\\xfeF\""});
}

TEST_F(GgufMalformed, Version) {
  PutU32(b_, 4, 1);
  ExpectError(b_, ErrorCode::kUnsupported, {"version at offset 4", "GGUF version 1 is not supported", "v1"});
  PutU32(b_, 4, 4);
  ExpectError(b_, ErrorCode::kUnsupported, {"GGUF version 4 is not supported (supported: 2, 3)"});
  PutU32(b_, 4, 0x03000000);
  ExpectError(b_, ErrorCode::kUnsupported, {"big-endian"});
  PutU32(b_, 4, 2);  // v2 has the same layout
  EXPECT_TRUE(Parse(b_).ok());
}

TEST_F(GgufMalformed, AbsurdCounts) {
  PutU64(b_, 8, uint64_t{1} << 40);
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor_count at offset 8", "1099511627776 tensors cannot fit"});
  b_ = good_;
  PutU64(b_, 16, uint64_t{1} << 40);
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata_kv_count at offset 16", "1099511627776 key-value pairs cannot fit"});
  b_ = good_;
  PutU64(b_, 16, ~uint64_t{0});
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata_kv_count"});
  b_ = good_;
  PutU64(b_, 8, 4);  // one tensor more than the infos hold: reads into the data section
  EXPECT_FALSE(Parse(b_).ok());
}

TEST_F(GgufMalformed, StringLengths) {
  PutU64(b_, l_.kv_key[0], uint64_t{1} << 62);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"metadata key #0 at offset 24", "string length 4611686018427387904 runs past the end of the file"});
  b_ = good_;
  PutU64(b_, l_.kv_value[0], good_.size());  // general.architecture's value
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"metadata 'general.architecture' value at offset " + std::to_string(l_.kv_value[0]), "string length"});
  b_ = good_;
  PutU64(b_, l_.kv_value[4] + 12 + 8 + 1, 1000);  // test.ccc element 1
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata 'test.ccc' element 1 at offset", "string length 1000"});
  b_ = good_;
  PutU64(b_, l_.t_name[1], 5000);
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor #1 name at offset " + std::to_string(l_.t_name[1]), "string length 5000"});
}

TEST_F(GgufMalformed, UnknownMetadataTypes) {
  PutU32(b_, l_.kv_type[2], 13);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"metadata 'test.aaa' value type at offset " + std::to_string(l_.kv_type[2]), "unknown metadata value type 13"});
  b_ = good_;
  PutU32(b_, l_.kv_value[3], 99);  // test.bbb element type
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata 'test.bbb' array element type", "unknown metadata value type 99"});
  b_ = good_;
  PutU32(b_, l_.kv_value[3], 9);  // arrays of arrays
  ExpectError(b_, ErrorCode::kUnsupported, {"metadata 'test.bbb' array element type", "arrays of arrays are not supported"});
}

TEST_F(GgufMalformed, ArrayLength) {
  PutU64(b_, l_.kv_value[3] + 4, uint64_t{1} << 61);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"metadata 'test.bbb' array length at offset " + std::to_string(l_.kv_value[3] + 4),
               "2305843009213693952 elements of type f32 run past the end"});
  b_ = good_;
  PutU64(b_, l_.kv_value[4] + 4, ~uint64_t{0});
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata 'test.ccc' array length", "elements of type string"});
}

TEST_F(GgufMalformed, DuplicateKey) {
  // "test.bbb" -> "test.aaa"
  std::memcpy(b_.data() + l_.kv_key[3] + 8, "test.aaa", 8);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"metadata key at offset " + std::to_string(l_.kv_key[3]), "duplicate key 'test.aaa'",
               "first defined at offset " + std::to_string(l_.kv_key[2])});
}

TEST_F(GgufMalformed, Alignment) {
  PutU32(b_, l_.kv_value[1], 24);
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata 'general.alignment' at offset", "alignment 24 is not a power of two"});
  PutU32(b_, l_.kv_value[1], 0);
  ExpectError(b_, ErrorCode::kCorruptFile, {"alignment 0 is not a power of two"});
  b_ = good_;
  PutU32(b_, l_.kv_type[1], 5);  // i32: same size, wrong type
  ExpectError(b_, ErrorCode::kCorruptFile, {"metadata 'general.alignment'", "has type i32, expected u32"});
  b_ = good_;
  PutU32(b_, l_.kv_value[1], 64);  // valid, but the tensors' offsets (0, 256, 416) are not all multiples of 64
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'c' offset", "is not a multiple of the alignment 64"});
}

TEST_F(GgufMalformed, Dimensions) {
  PutU32(b_, l_.t_ndims[0], 5);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'a' n_dims at offset " + std::to_string(l_.t_ndims[0]), "5 dimensions (at most 4 are allowed)"});
  b_ = good_;
  PutU64(b_, l_.t_ndims[0] + 4, uint64_t{1} << 32);
  PutU64(b_, l_.t_ndims[0] + 12, uint64_t{1} << 32);
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'a' dims at offset", "4294967296 x 4294967296 overflows 64 bits"});
  b_ = good_;
  PutU64(b_, l_.t_ndims[0] + 12, uint64_t{1} << 63);
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'a' ne[1] at offset", "exceeds 2^63-1"});
  b_ = good_;
  PutU64(b_, l_.t_ndims[1] + 4, 33);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'b' ne[0] at offset " + std::to_string(l_.t_ndims[1] + 4),
               "row length 33 is not a multiple of the Q8_0 block size 32"});
  b_ = good_;
  PutU32(b_, l_.t_type[0], 28);                      // F64 ...
  PutU64(b_, l_.t_ndims[0] + 4, uint64_t{1} << 61);  // ... x 2: 2^62 elements, 2^65 bytes
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'a' dims", "byte size of the tensor overflows 64 bits"});
  b_ = good_;
  PutU64(b_, l_.t_ndims[0] + 4, 1 << 20);  // fits 64 bits, not the file
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'a' offset", "runs past the end of the file"});
}

TEST_F(GgufMalformed, TensorTypes) {
  PutU32(b_, l_.t_type[1], 200);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'b' type at offset " + std::to_string(l_.t_type[1]), "unknown ggml tensor type 200"});
  PutU32(b_, l_.t_type[1], 4);  // Q4_2, long retired
  ExpectError(b_, ErrorCode::kCorruptFile, {"unknown ggml tensor type 4"});
  // A known type fgemma cannot compute with parses; its view is refused.
  b_ = good_;
  PutU32(b_, l_.t_type[0], 24);  // I8: 64 bytes of the 256 F32 ones
  auto f = Parse(b_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->GetTensorView("a").status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(f->GetTensorView("a").status().message(), "ggml tensor type I8 is not supported"));
}

// The K-quant presets' types are sized by their blocks: a row that is no whole number of
// super-blocks, or data past the end of the file, names the tensor and the offset.
TEST_F(GgufMalformed, KQuantTensorSizes) {
  PutU32(b_, l_.t_type[1], 12);  // 'b' [64, 2] as Q4_K: 64 is not a multiple of 256
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'b' ne[0] at offset " + std::to_string(l_.t_ndims[1] + 4),
               "row length 64 is not a multiple of the Q4_K block size 256"});
  b_ = good_;
  PutU32(b_, l_.t_type[2], 14);           // 'c' as Q6_K ...
  PutU64(b_, l_.t_ndims[2] + 4, 256 * 4);  // ... of 4 super-blocks: 840 bytes, past the end
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'c' offset", "runs past the end of the file"});
  b_ = good_;
  PutU32(b_, l_.t_type[0], 6);  // 'a' [32, 2] as Q5_0: 44 of its 256 bytes, a valid view
  auto f = Parse(b_);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto v = f->GetTensorView("a");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->dtype, DType::kQ5_0);
  EXPECT_EQ(v->bytes(), 44u);
}

TEST_F(GgufMalformed, TensorOffsets) {
  auto f = Parse(good_);
  const uint64_t off_b = f->tensors()[1].offset;
  PutU64(b_, l_.t_offset[1], off_b + 4);
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'b' offset at offset " + std::to_string(l_.t_offset[1]),
               "data offset " + std::to_string(off_b + 4) + " is not a multiple of the alignment 32"});
  b_ = good_;
  PutU64(b_, l_.t_offset[1], uint64_t{1} << 40);
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'b' offset", "runs past the end of the file"});
  b_ = good_;
  PutU64(b_, l_.t_offset[1], ~uint64_t{31});  // 2^64 - 32: offset + size would wrap
  ExpectError(b_, ErrorCode::kCorruptFile, {"tensor 'b' offset", "runs past the end of the file"});
  b_ = good_;
  PutU64(b_, l_.t_offset[2], off_b + 32);  // c inside b
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor 'c' offset", "overlaps tensor 'b' data [" + std::to_string(off_b) + ", " + std::to_string(off_b + 136) + ")"});
  b_ = good_;
  PutU64(b_, l_.t_offset[1], 0);  // b at a's place
  ExpectError(b_, ErrorCode::kCorruptFile, {"overlaps tensor"});
}

TEST_F(GgufMalformed, DuplicateTensorName) {
  b_[l_.t_name[2] + 8] = 'a';  // "c" -> "a"
  ExpectError(b_, ErrorCode::kCorruptFile,
              {"tensor name at offset " + std::to_string(l_.t_name[2]), "duplicate tensor name 'a'",
               "first defined at offset " + std::to_string(l_.t_name[0])});
}

TEST_F(GgufMalformed, OpenNamesThePath) {
  const std::string path = test::TempDir() + "/truncated.gguf";
  ASSERT_TRUE(WriteStringToFile(path, std::string(good_.begin(), good_.begin() + 100)).ok());
  auto f = GgufFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kCorruptFile);
  EXPECT_TRUE(Contains(f.status().message(), path + ": ")) << f.status().ToString();
}

// A deterministic mini-fuzzer: random byte edits and truncations of the header never crash or read
// out of bounds (the asan preset checks the latter).
TEST_F(GgufMalformed, RandomEditsNeverCrash) {
  auto f = Parse(good_);
  const size_t header = static_cast<size_t>(f->data_offset());
  std::mt19937_64 rng(20240601);
  const uint8_t specials[] = {0x00, 0xff, 0x80, 0x7f, 0x01, 0x20};
  int parsed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint8_t> b = good_;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % header;
      b[at] = (rng() & 1) ? specials[rng() % sizeof(specials)] : static_cast<uint8_t>(rng());
    }
    const size_t n = rng() % 4 == 0 ? rng() % (b.size() + 1) : b.size();
    const std::vector<uint8_t> exact(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    if (ParseGgufFromMemory(exact.empty() ? nullptr : exact.data(), exact.size()).ok()) ++parsed;
  }
  EXPECT_GT(parsed, 0);  // some edits (e.g. in string bytes) leave a valid file
  EXPECT_LT(parsed, 4000);
}

}  // namespace
}  // namespace fgemma
