// GgufWriter: every metadata type and several tensor types round-trip through GgufFile, and
// rewriting mini-q8_0.gguf tensor by tensor reproduces it byte for byte.
#include "io/gguf_writer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>

#include "io/gguf.h"
#include "util/weight_types.h"
#include "io_test_util.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

using test::Contains;

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  return b;
}

GgufWriter MustCreate(const std::string& path) {
  auto w = GgufWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return std::move(w).value();
}

#define ASSERT_OK(expr)                                 \
  do {                                                  \
    const ::fgemma::Status s_ = (expr);                 \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

TEST(GgufWriter, EveryMetadataTypeRoundTrips) {
  const std::string path = test::TempDir() + "/all.gguf";
  GgufWriter w = MustCreate(path);
  ASSERT_OK(w.AddU8("t.u8", 200));
  ASSERT_OK(w.AddI8("t.i8", -100));
  ASSERT_OK(w.AddU16("t.u16", 60000));
  ASSERT_OK(w.AddI16("t.i16", -30000));
  ASSERT_OK(w.AddU32("t.u32", 4000000000u));
  ASSERT_OK(w.AddI32("t.i32", -2000000000));
  ASSERT_OK(w.AddF32("t.f32", 3.25f));
  ASSERT_OK(w.AddBool("t.true", true));
  ASSERT_OK(w.AddBool("t.false", false));
  const std::string odd_string("h\xc3\xa9llo\0world", 12);
  ASSERT_OK(w.AddString("t.string", odd_string));
  ASSERT_OK(w.AddString("t.empty", ""));
  ASSERT_OK(w.AddU64("t.u64", (uint64_t{1} << 63) + 5));
  ASSERT_OK(w.AddI64("t.i64", -(int64_t{1} << 62)));
  ASSERT_OK(w.AddF64("t.f64", std::numbers::pi));
  const uint8_t u8s[] = {0, 1, 255};
  const int8_t i8s[] = {-128, 0, 127};
  const uint16_t u16s[] = {1, 65535};
  const int16_t i16s[] = {-32768, 7};
  const uint32_t u32s[] = {0xffffffffu, 3};
  const uint64_t u64s[] = {~uint64_t{0}, 9};
  const int64_t i64s[] = {INT64_MIN, INT64_MAX};
  const double f64s[] = {0.1, -2.5e300};
  const uint8_t bools[] = {1, 0, 1};
  ASSERT_OK(w.AddArray("a.u8", GgufType::kUint8, u8s, 3));
  ASSERT_OK(w.AddArray("a.i8", GgufType::kInt8, i8s, 3));
  ASSERT_OK(w.AddArray("a.u16", GgufType::kUint16, u16s, 2));
  ASSERT_OK(w.AddArray("a.i16", GgufType::kInt16, i16s, 2));
  ASSERT_OK(w.AddArray("a.u32", GgufType::kUint32, u32s, 2));
  ASSERT_OK(w.AddI32Array("a.i32", {-1, 0, 2147483647}));
  ASSERT_OK(w.AddF32Array("a.f32", {1.5f, -0.0f, 1e-30f}));
  ASSERT_OK(w.AddArray("a.bool", GgufType::kBool, bools, 3));
  ASSERT_OK(w.AddStringArray("a.string", {"<bos>", "", "▁hello", std::string("\0x", 2)}));
  ASSERT_OK(w.AddArray("a.u64", GgufType::kUint64, u64s, 2));
  ASSERT_OK(w.AddArray("a.i64", GgufType::kInt64, i64s, 2));
  ASSERT_OK(w.AddArray("a.f64", GgufType::kFloat64, f64s, 2));
  ASSERT_OK(w.AddArray("a.empty", GgufType::kInt32, nullptr, 0));
  ASSERT_OK(w.AddStringArray("a.empty_strings", {}));

  // Tensors of several types and ranks; one written row by row, one of zero size.
  struct Decl {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> ne;
  };
  const std::vector<Decl> decls = {
      {"f32", ggml_type::kF32, {5, 3}},
      {"f16", ggml_type::kF16, {32, 2}},
      {"bf16", ggml_type::kBF16, {7}},
      {"q8_0", ggml_type::kQ8_0, {64, 4}},
      {"q4_0.3d", ggml_type::kQ4_0, {32, 2, 3}},
      {"empty", ggml_type::kF32, {0, 4}},
      {"q3_k", 11, {256, 2}},  // a ggml type fgemma cannot compute with
      {"i8.4d", 24, {3, 2, 2, 2}},
  };
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < decls.size(); ++i) {
    ASSERT_OK(w.DeclareTensor(decls[i].name, decls[i].type, decls[i].ne));
    uint32_t bs = 0, bb = 0;
    ASSERT_TRUE(GgmlTypeLayout(decls[i].type, &bs, &bb));
    uint64_t n = 1;
    for (uint64_t d : decls[i].ne) n *= d;
    data.push_back(Bytes(n / bs * bb, static_cast<uint32_t>(i)));
  }
  for (size_t i = 0; i < decls.size(); ++i) {
    if (decls[i].name == "empty") continue;  // zero-byte tensors need no call
    if (decls[i].name == "q8_0") {
      const size_t row = data[i].size() / 4;
      for (size_t r = 0; r < 4; ++r) ASSERT_OK(w.WriteTensorData("q8_0", data[i].data() + r * row, row));
    } else {
      ASSERT_OK(w.WriteTensorData(decls[i].name, data[i].data(), data[i].size()));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // only the temporary exists until Finish()
  ASSERT_OK(w.Finish());
  ASSERT_TRUE(std::filesystem::exists(path));

  auto opened = GgufFile::Open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  const GgufFile& f = *opened;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 28u);
  EXPECT_EQ(f.metadata()[0].key, "t.u8");  // file order = insertion order
  EXPECT_EQ(f.metadata()[27].key, "a.empty_strings");
  EXPECT_EQ(f.Find("t.u8")->type, GgufType::kUint8);
  EXPECT_EQ(*f.GetU32("t.u8"), 200u);
  EXPECT_EQ(f.Find("t.i8")->type, GgufType::kInt8);
  EXPECT_EQ(*f.GetI32("t.i8"), -100);
  EXPECT_EQ(f.Find("t.u16")->type, GgufType::kUint16);
  EXPECT_EQ(*f.GetU32("t.u16"), 60000u);
  EXPECT_EQ(f.Find("t.i16")->type, GgufType::kInt16);
  EXPECT_EQ(*f.GetI64("t.i16"), -30000);
  EXPECT_EQ(*f.GetU32("t.u32"), 4000000000u);
  EXPECT_EQ(*f.GetI32("t.i32"), -2000000000);
  EXPECT_EQ(f.Find("t.f32")->type, GgufType::kFloat32);
  EXPECT_EQ(*f.GetF32("t.f32"), 3.25f);
  EXPECT_EQ(*f.GetBool("t.true"), true);
  EXPECT_EQ(*f.GetBool("t.false"), false);
  EXPECT_EQ(*f.GetString("t.string"), odd_string);
  EXPECT_EQ(*f.GetString("t.empty"), "");
  EXPECT_EQ(*f.GetU64("t.u64"), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(*f.GetI64("t.i64"), -(int64_t{1} << 62));
  EXPECT_EQ(f.Find("t.f64")->type, GgufType::kFloat64);
  EXPECT_EQ(*f.GetF64("t.f64"), std::numbers::pi);
  // Range checks of the converting integer getters.
  EXPECT_EQ(f.GetI32("t.u32").status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(f.GetU32("t.i8").status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(f.GetI64("t.u64").status().code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(Contains(f.GetU32("t.u64").status().message(), "value 9223372036854775813 does not fit in u32"));

  auto raw_array = [&](const char* key, GgufType type, const void* want, size_t n) {
    const GgufValue* v = f.Find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->type, GgufType::kArray) << key;
    EXPECT_EQ(v->array_type, type) << key;
    ASSERT_EQ(v->array_count, n) << key;
    EXPECT_EQ(std::memcmp(v->array_data, want, n * GgufTypeSize(type)), 0) << key;
  };
  raw_array("a.u8", GgufType::kUint8, u8s, 3);
  raw_array("a.i8", GgufType::kInt8, i8s, 3);
  raw_array("a.u16", GgufType::kUint16, u16s, 2);
  raw_array("a.i16", GgufType::kInt16, i16s, 2);
  raw_array("a.u32", GgufType::kUint32, u32s, 2);
  raw_array("a.bool", GgufType::kBool, bools, 3);
  raw_array("a.u64", GgufType::kUint64, u64s, 2);
  raw_array("a.i64", GgufType::kInt64, i64s, 2);
  raw_array("a.f64", GgufType::kFloat64, f64s, 2);
  EXPECT_EQ(*f.GetI32Array("a.i32"), (std::vector<int32_t>{-1, 0, 2147483647}));
  EXPECT_EQ(*f.GetI32Array("a.i8"), (std::vector<int32_t>{-128, 0, 127}));
  EXPECT_EQ(*f.GetU32Array("a.u16"), (std::vector<uint32_t>{1, 65535}));
  EXPECT_EQ(f.GetU32Array("a.i8").status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(f.GetI32Array("a.u32").status().code(), ErrorCode::kOutOfRange);
  const std::vector<float> f32s = *f.GetF32Array("a.f32");
  ASSERT_EQ(f32s.size(), 3u);
  EXPECT_EQ(std::bit_cast<uint32_t>(f32s[1]), 0x80000000u);
  EXPECT_EQ(f32s[2], 1e-30f);
  EXPECT_EQ(*f.GetF32Array("a.f64"), (std::vector<float>{0.1f, -INFINITY}));
  EXPECT_EQ(*f.GetStringArray("a.string"), (std::vector<std::string>{"<bos>", "", "▁hello", std::string("\0x", 2)}));
  EXPECT_TRUE(f.GetI32Array("a.empty")->empty());
  EXPECT_TRUE(f.GetStringArray("a.empty_strings")->empty());

  ASSERT_EQ(f.tensors().size(), decls.size());
  for (size_t i = 0; i < decls.size(); ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(decls[i].name);
    EXPECT_EQ(t.name, decls[i].name);
    EXPECT_EQ(t.ggml_type, decls[i].type);
    ASSERT_EQ(t.n_dims, decls[i].ne.size());
    for (size_t d = 0; d < decls[i].ne.size(); ++d) EXPECT_EQ(t.ne[d], decls[i].ne[d]);
    EXPECT_EQ(t.offset % 32, 0u);
    ASSERT_EQ(t.n_bytes, data[i].size());
    if (!data[i].empty()) EXPECT_EQ(std::memcmp(f.TensorData(t), data[i].data(), data[i].size()), 0);
  }
  auto q4 = f.GetTensorView("q4_0.3d");
  ASSERT_TRUE(q4.ok());
  EXPECT_EQ(q4->rows, 6u);
  EXPECT_EQ(q4->cols, 32u);
  EXPECT_EQ(q4->dtype, DType::kQ4_0);
  auto q3k = f.GetTensorView("q3_k");
  EXPECT_EQ(q3k.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(q3k.status().message(), "tensor 'q3_k': ggml tensor type Q3_K is not supported"))
      << q3k.status().ToString();
  EXPECT_EQ(f.GetTensorView("empty")->rows, 4u);
}

TEST(GgufWriter, CustomAlignment) {
  const std::string path = test::TempDir() + "/aligned.gguf";
  GgufWriter w = MustCreate(path);
  ASSERT_OK(w.AddU32("general.alignment", 256));
  EXPECT_EQ(w.alignment(), 256u);
  ASSERT_OK(w.DeclareTensor("a", DType::kF32, {3}));
  ASSERT_OK(w.DeclareTensor("b", DType::kBF16, {5, 5}));
  const std::vector<uint8_t> a = Bytes(12, 1), b = Bytes(50, 2);
  ASSERT_OK(w.WriteTensorData("a", a.data(), a.size()));
  ASSERT_OK(w.WriteTensorData("b", b.data(), b.size()));
  ASSERT_OK(w.Finish());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset() % 256, 0u);
  EXPECT_EQ(f->tensors()[1].offset, 256u);
  EXPECT_EQ(f->file_size(), f->data_offset() + 512);  // the last tensor is padded too
  EXPECT_EQ(std::memcmp(f->TensorData(f->tensors()[1]), b.data(), b.size()), 0);
}

TEST(GgufWriter, MetadataOnlyFile) {
  const std::string path = test::TempDir() + "/meta.gguf";
  GgufWriter w = MustCreate(path);
  ASSERT_OK(w.AddString("general.architecture", "gemma3"));
  ASSERT_OK(w.Finish());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(*f->Architecture(), "gemma3");
}

TEST(GgufWriter, MisuseIsReported) {
  const std::string dir = test::TempDir();
  auto expect_error = [](const Status& s, const std::string& text) {
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), text)) << s.ToString() << "\n  wanted: " << text;
  };
  {
    GgufWriter w = MustCreate(dir + "/dup-key.gguf");
    ASSERT_OK(w.AddU32("k", 1));
    expect_error(w.AddString("k", "x"), "duplicate metadata key 'k'");
    expect_error(w.Finish(), "duplicate metadata key 'k'");  // sticky
  }
  {
    GgufWriter w = MustCreate(dir + "/align.gguf");
    expect_error(w.AddU32("general.alignment", 24), "general.alignment 24 is not a power of two");
  }
  {
    GgufWriter w = MustCreate(dir + "/align-type.gguf");
    expect_error(w.AddU64("general.alignment", 32), "general.alignment must be u32");
  }
  {
    GgufWriter w = MustCreate(dir + "/array.gguf");
    expect_error(w.AddArray("a", GgufType::kString, nullptr, 0), "AddArray takes fixed-size elements, not string");
  }
  {
    GgufWriter w = MustCreate(dir + "/shapes.gguf");
    expect_error(w.DeclareTensor("q", DType::kQ8_0, {48, 2}), "row length 48 is not a multiple of the Q8_0 block size 32");
  }
  {
    GgufWriter w = MustCreate(dir + "/dims.gguf");
    expect_error(w.DeclareTensor("q", DType::kF32, {1, 1, 1, 1, 1}), "5 dimensions");
  }
  {
    GgufWriter w = MustCreate(dir + "/name.gguf");
    expect_error(w.DeclareTensor(std::string(64, 'n'), DType::kF32, {1}), "names must be 1 to 63 bytes long");
  }
  {
    GgufWriter w = MustCreate(dir + "/type.gguf");
    expect_error(w.DeclareTensor("t", 77u, {1}), "unknown ggml type 77");
  }
  {
    GgufWriter w = MustCreate(dir + "/overflow.gguf");
    expect_error(w.DeclareTensor("t", DType::kF32, {uint64_t{1} << 32, uint64_t{1} << 32}), "element count overflows");
  }
  {
    GgufWriter w = MustCreate(dir + "/dup-tensor.gguf");
    ASSERT_OK(w.DeclareTensor("t", DType::kF32, {1}));
    expect_error(w.DeclareTensor("t", DType::kF32, {2}), "duplicate tensor name 't'");
  }
  {
    GgufWriter w = MustCreate(dir + "/order.gguf");
    ASSERT_OK(w.DeclareTensor("a", DType::kF32, {1}));
    ASSERT_OK(w.DeclareTensor("b", DType::kF32, {1}));
    const float x = 1;
    expect_error(w.WriteTensorData("b", &x, 4), "data for tensor 'b' while tensor 'a' is next");
  }
  {
    GgufWriter w = MustCreate(dir + "/too-much.gguf");
    ASSERT_OK(w.DeclareTensor("a", DType::kF32, {1}));
    const float x[2] = {1, 2};
    expect_error(w.WriteTensorData("a", x, 8), "8 bytes written with only 4 of its 4 bytes left");
  }
  {
    GgufWriter w = MustCreate(dir + "/late.gguf");
    ASSERT_OK(w.DeclareTensor("a", DType::kF32, {1}));
    const float x = 1;
    ASSERT_OK(w.WriteTensorData("a", &x, 4));
    expect_error(w.AddU32("late", 1), "metadata 'late' added after tensor data was written");
  }
  {
    GgufWriter w = MustCreate(dir + "/undeclared.gguf");
    ASSERT_OK(w.DeclareTensor("a", DType::kF32, {1}));
    const float x = 1;
    ASSERT_OK(w.WriteTensorData("a", &x, 4));
    expect_error(w.WriteTensorData("a", &x, 4), "which is already complete");
  }
  // An incomplete file is never renamed into place, and its temporary is removed.
  const std::string incomplete = dir + "/incomplete.gguf";
  {
    GgufWriter w = MustCreate(incomplete);
    ASSERT_OK(w.DeclareTensor("a", DType::kF32, {4}));
    ASSERT_OK(w.DeclareTensor("b", DType::kF32, {4}));
    const float x[4] = {};
    ASSERT_OK(w.WriteTensorData("a", x, 8));
    expect_error(w.Finish(), "tensor 'a' is incomplete: 8 of 16 bytes written (2 tensors incomplete)");
  }
  EXPECT_FALSE(std::filesystem::exists(incomplete));
  {
    GgufWriter w = MustCreate(dir + "/abandoned.gguf");
    ASSERT_OK(w.AddU32("k", 1));
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/abandoned.gguf"));
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(Contains(e.path().string(), ".tmp.")) << e.path();
  }
  auto bad_dir = GgufWriter::Create(dir + "/no/such/dir/x.gguf");
  EXPECT_EQ(bad_dir.status().code(), ErrorCode::kIoError);
}

// Streams mini-q8_0.gguf through the writer: every metadata value copied, every tensor declared and
// written one at a time. The result equals the fixture byte for byte (gguf-py's layout).
TEST(GgufWriter, RewritesMiniQ8_0Identically) {
  GgufFile src = test::OpenMiniGguf("q8_0");
  const std::string path = test::TempDir() + "/mini-q8_0.gguf";
  GgufWriter w = MustCreate(path);
  for (const GgufKeyValue& kv : src.metadata()) ASSERT_OK(w.AddValue(kv.key, kv.value));
  for (const GgufTensorInfo& t : src.tensors()) {
    ASSERT_OK(w.DeclareTensor(t.name, t.ggml_type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)));
  }
  for (const GgufTensorInfo& t : src.tensors()) ASSERT_OK(w.WriteTensorData(t.name, src.TensorData(t), t.n_bytes));
  ASSERT_OK(w.Finish());

  auto out = GgufFile::Open(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->metadata().size(), src.metadata().size());
  for (size_t i = 0; i < src.metadata().size(); ++i) {
    const GgufKeyValue& a = src.metadata()[i];
    const GgufKeyValue& b = out->metadata()[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.value.type, b.value.type);
    EXPECT_EQ(a.value.scalar_bits, b.value.scalar_bits);
    EXPECT_EQ(a.value.string, b.value.string);
    EXPECT_EQ(a.value.array_type, b.value.array_type);
    EXPECT_EQ(a.value.array_count, b.value.array_count);
    EXPECT_EQ(a.value.array_strings, b.value.array_strings);
  }
  ASSERT_EQ(out->tensors().size(), src.tensors().size());
  for (size_t i = 0; i < src.tensors().size(); ++i) {
    const GgufTensorInfo& a = src.tensors()[i];
    const GgufTensorInfo& b = out->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.ne, b.ne);
    EXPECT_EQ(a.ggml_type, b.ggml_type);
    EXPECT_EQ(a.offset, b.offset);
    ASSERT_EQ(a.n_bytes, b.n_bytes);
    EXPECT_EQ(std::memcmp(src.TensorData(a), out->TensorData(b), a.n_bytes), 0) << a.name;
  }
  ASSERT_EQ(out->file_size(), src.file_size());
  EXPECT_EQ(std::memcmp(out->file_data(), src.file_data(), src.file_size()), 0);
  std::filesystem::remove(path);  // 24 MB
}

// The converter path: stream the bf16 file, quantizing its 2-D weights row by row and keeping the
// float32 norms; with general.file_type set to Q4_0 the result is gguf-py's q4_0 file byte for byte.
TEST(GgufWriter, QuantizingConverterReproducesMiniQ4_0) {
  GgufFile src = test::OpenMiniGguf("bf16");
  const std::string path = test::TempDir() + "/mini-q4_0.gguf";
  GgufWriter w = MustCreate(path);
  for (const GgufKeyValue& kv : src.metadata()) {
    if (kv.key == "general.file_type") {
      ASSERT_OK(w.AddU32(kv.key, 2));  // LLAMA_FTYPE_MOSTLY_Q4_0
    } else {
      ASSERT_OK(w.AddValue(kv.key, kv.value));
    }
  }
  auto out_type = [](const GgufTensorInfo& t) { return t.ggml_type == ggml_type::kBF16 ? DType::kQ4_0 : DType::kF32; };
  for (const GgufTensorInfo& t : src.tensors()) {
    ASSERT_OK(w.DeclareTensor(t.name, out_type(t), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)));
  }
  for (const GgufTensorInfo& t : src.tensors()) {
    auto view = src.GetTensorView(t);
    ASSERT_TRUE(view.ok());
    std::vector<uint8_t> row(RowBytes(out_type(t), view->cols));
    for (size_t r = 0; r < view->rows; ++r) {
      const std::vector<float> x = test::RowAsFloats(*view, r);
      ASSERT_OK(QuantizeRow(out_type(t), x.data(), x.size(), row.data()));
      ASSERT_OK(w.WriteTensorData(t.name, row.data(), row.size()));
    }
  }
  ASSERT_OK(w.Finish());
  auto out = MappedFile::Open(path);
  ASSERT_TRUE(out.ok());
  auto fixture = MappedFile::Open(test::FixturePath("models/mini-q4_0.gguf"));
  ASSERT_TRUE(fixture.ok());
  ASSERT_EQ(out->size(), fixture->size());
  EXPECT_EQ(std::memcmp(out->data(), fixture->data(), out->size()), 0);
  std::filesystem::remove(path);  // 16 MB
}

}  // namespace
}  // namespace fgemma
