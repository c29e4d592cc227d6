// The six ggml types llama.cpp's K-quant presets write beside q8_0 / q4_0 (q4_1, q5_0, q5_1, q4_K,
// q5_K, q6_K): blocks built by hand from the format's definition decode to the known values; the
// encoders round-trip; GGUF files of each type load with their shapes and sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "io_test_util.h"
#include "util/float_types.h"
#include "util/tensor.h"
#include "util/weight_types.h"

namespace fgemma {
namespace kquant_formats {
namespace {

void PutF16(uint8_t* p, float v) {
  const uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

std::vector<float> Decode(DType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n);
  DequantizeRow(TensorView{type, 1, n, bytes.data()}, 0, out.data());
  return out;
}

// The 5-bit types' qh / q from 32 levels v (elements j and j + 16 share q[j]; bit e of qh for e).
void PutFiveBit(const int* v, uint8_t* qh, uint8_t* q) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>((v[j] & 15) | (v[j + 16] & 15) << 4);
    high |= static_cast<uint32_t>((v[j] >> 4) & 1) << j | static_cast<uint32_t>((v[j + 16] >> 4) & 1) << (j + 16);
  }
  std::memcpy(qh, &high, 4);
}

TEST(KQuantFormats, Q4_1HandBlock) {
  std::vector<uint8_t> b(20);
  PutF16(b.data(), 0.5f);
  PutF16(b.data() + 2, -1.0f);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto x = Decode(DType::kQ4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(x[j], 0.5f * j - 1.0f) << j;
    EXPECT_EQ(x[j + 16], 0.5f * (15 - j) - 1.0f) << j;
  }
}

TEST(KQuantFormats, Q5_0AndQ5_1HandBlocks) {
  int v[32];
  for (int e = 0; e < 32; ++e) v[e] = (e * 7 + 3) % 32;  // every level, fifth bits in both halves
  std::vector<uint8_t> b0(22), b1(24);
  PutF16(b0.data(), 0.25f);
  PutFiveBit(v, b0.data() + 2, b0.data() + 6);
  PutF16(b1.data(), 2.0f);
  PutF16(b1.data() + 2, 0.5f);
  PutFiveBit(v, b1.data() + 4, b1.data() + 8);
  const auto x0 = Decode(DType::kQ5_0, b0, 32), x1 = Decode(DType::kQ5_1, b1, 32);
  for (int e = 0; e < 32; ++e) {
    EXPECT_EQ(x0[e], 0.25f * (v[e] - 16)) << e;
    EXPECT_EQ(x1[e], 2.0f * v[e] + 0.5f) << e;
  }
}

// Q4_K / Q5_K scales[12] from 8 six-bit scales and mins, written from the layout's description.
void PutScaleMins(const int* sc, const int* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | (m[j + 4] >> 4) << 6);
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
  }
}

TEST(KQuantFormats, ScaleMinPacking) {
  const int sc[8] = {1, 2, 3, 63, 17, 33, 50, 63}, m[8] = {0, 5, 62, 15, 20, 40, 60, 63};
  uint8_t s[12];
  PutScaleMins(sc, m, s);
  for (size_t j = 0; j < 8; ++j) {
    EXPECT_EQ(KQuantScaleMin(s, j).scale, sc[j]) << j;
    EXPECT_EQ(KQuantScaleMin(s, j).min, m[j]) << j;
  }
}

TEST(KQuantFormats, Q4_KAndQ5_KHandBlocks) {
  const int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63}, m[8] = {0, 5, 10, 15, 20, 40, 60, 63};
  auto level = [](int e) { return (e * 5 + e / 32) % 32; };  // 5-bit; Q4_K keeps the low 4 bits
  std::vector<uint8_t> k4(144), k5(176);
  for (auto* blk : {&k4, &k5}) {
    PutF16(blk->data(), 0.5f);
    PutF16(blk->data() + 2, 0.25f);
    PutScaleMins(sc, m, blk->data() + 4);
  }
  // Element 64c + l: low nibble of q[32c + l]; 64c + 32 + l: its high nibble. Q5_K: fifth bits in
  // bits 2c and 2c + 1 of qh[l].
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = level(64 * c + l), hi = level(64 * c + 32 + l);
      k4[16 + 32 * c + l] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
      k5[48 + 32 * c + l] = k4[16 + 32 * c + l];
      k5[16 + l] = static_cast<uint8_t>(k5[16 + l] | (lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
    }
  }
  const auto x4 = Decode(DType::kQ4_K, k4, 256), x5 = Decode(DType::kQ5_K, k5, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(x4[e], 0.5f * sc[j] * (level(e) & 15) - 0.25f * m[j]) << e;
    EXPECT_EQ(x5[e], 0.5f * sc[j] * level(e) - 0.25f * m[j]) << e;
  }
}

TEST(KQuantFormats, Q6_KHandBlock) {
  std::vector<uint8_t> b(210);
  auto level = [](int e) { return (e * 11 + e / 64) % 64; };
  auto scale = [](int s) { return s * 9 - 64; };  // -64 .. 71: signed scales
  // Half h, l < 32: element 128h + 32i + l; low 4 bits in ql[64h + l] (i = 0 low, 2 high nibble) or
  // ql[64h + 32 + l] (i = 1 low, 3 high); top 2 bits at bits 2i of qh[32h + l].
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int v0 = level(128 * h + l), v1 = level(128 * h + 32 + l), v2 = level(128 * h + 64 + l),
                v3 = level(128 * h + 96 + l);
      b[64 * h + l] = static_cast<uint8_t>((v0 & 15) | (v2 & 15) << 4);
      b[64 * h + 32 + l] = static_cast<uint8_t>((v1 & 15) | (v3 & 15) << 4);
      b[128 + 32 * h + l] = static_cast<uint8_t>(v0 >> 4 | (v1 >> 4) << 2 | (v2 >> 4) << 4 | (v3 >> 4) << 6);
    }
  }
  for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(scale(s)));
  PutF16(b.data() + 208, 0.125f);
  const auto x = Decode(DType::kQ6_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(x[e], 0.125f * scale(e / 16) * (level(e) - 32)) << e;
}

// Encode then decode random rows: the RMS error relative to the row's RMS stays within what the
// type's levels allow (and a layout mismatch between encoder and decoder would not).
TEST(KQuantFormats, EncodersRoundTrip) {
  struct Case {
    DType type;
    double max_relative_rms;
  };
  const Case cases[] = {{DType::kQ4_1, 0.12}, {DType::kQ5_0, 0.06}, {DType::kQ5_1, 0.05},
                        {DType::kQ4_K, 0.14}, {DType::kQ5_K, 0.07}, {DType::kQ6_K, 0.035}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t n = 512;
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  x[3] = 6.0f;  // an outlier
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes(RowBytes(c.type, n));
    ASSERT_TRUE(QuantizeRow(c.type, x.data(), n, bytes.data()).ok());
    const auto back = Decode(c.type, bytes, n);
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
      err += (back[i] - x[i]) * (back[i] - x[i]);
      ref += x[i] * x[i];
    }
    EXPECT_LT(std::sqrt(err / ref), c.max_relative_rms) << DTypeName(c.type);
    EXPECT_GT(std::sqrt(err / ref), 0.0) << DTypeName(c.type);
  }
}

TEST(KQuantFormats, ZeroAndNonFiniteRowsAreSafe) {
  for (DType t : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    std::vector<float> x(256, 0.0f);
    std::vector<uint8_t> bytes(RowBytes(t, 256));
    ASSERT_TRUE(QuantizeRow(t, x.data(), 256, bytes.data()).ok());
    for (float v : Decode(t, bytes, 256)) EXPECT_EQ(v, 0.0f) << DTypeName(t);
    x[5] = NAN;
    x[9] = INFINITY;
    ASSERT_TRUE(QuantizeRow(t, x.data(), 256, bytes.data()).ok());  // no UB, no crash
  }
  EXPECT_FALSE(QuantizeRow(DType::kQ4_K, nullptr, 640, nullptr).ok());  // 640 is not a multiple of 256
}

TEST(KQuantFormats, NamesAndIds) {
  EXPECT_EQ(DTypeFromName("q4_K").value(), DType::kQ4_K);
  EXPECT_EQ(DTypeFromName("Q4_K").value(), DType::kQ4_K);
  EXPECT_EQ(DTypeFromName("q6_k").value(), DType::kQ6_K);
  EXPECT_EQ(DTypeFromGgmlType(6).value(), DType::kQ5_0);
  EXPECT_EQ(DTypeFromGgmlType(14).value(), DType::kQ6_K);
  EXPECT_TRUE(test::Contains(DTypeFromName("q3_K").status().message(), "q4_K, q5_K or q6_K"));
  for (uint32_t refused : {10u, 11u, 16u, 20u, 23u}) {  // Q2_K, Q3_K, IQ2_XXS, IQ4_NL, IQ4_XS
    EXPECT_EQ(DTypeFromGgmlType(refused).status().code(), ErrorCode::kUnsupported) << refused;
  }
}

// A GGUF file with a tensor of each type (FunctionGemma's shapes: 640-wide rows for the 32-value
// types, 1024-wide for the K types) loads each with its type, shape and bytes.
TEST(KQuantFormats, GgufTensorsLoad) {
  const std::string path = test::TempDir() + "/kquant.gguf";
  struct Decl {
    const char* name;
    DType type;
    size_t cols, rows;
  };
  const Decl decls[] = {{"a", DType::kQ4_1, 640, 3}, {"b", DType::kQ5_0, 640, 2}, {"c", DType::kQ5_1, 640, 1},
                        {"d", DType::kQ4_K, 1024, 2}, {"e", DType::kQ5_K, 256, 3}, {"f", DType::kQ6_K, 2048, 1}};
  std::vector<std::vector<uint8_t>> data;
  {
    auto w = GgufWriter::Create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->AddString("general.architecture", "gemma3").ok());
    for (const Decl& d : decls) ASSERT_TRUE(w->DeclareTensor(d.name, d.type, {d.cols, d.rows}).ok());
    std::mt19937 rng(3);
    for (const Decl& d : decls) {
      std::vector<float> x(d.cols * d.rows);
      for (float& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
      data.emplace_back(RowBytes(d.type, d.cols) * d.rows);
      for (size_t r = 0; r < d.rows; ++r)
        ASSERT_TRUE(QuantizeRow(d.type, x.data() + r * d.cols, d.cols, data.back().data() + r * RowBytes(d.type, d.cols)).ok());
      ASSERT_TRUE(w->WriteTensorData(d.name, data.back().data(), data.back().size()).ok());
    }
    ASSERT_TRUE(w->Finish().ok());
  }
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (size_t i = 0; i < std::size(decls); ++i) {
    auto v = f->GetTensorView(decls[i].name);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->dtype, decls[i].type);
    EXPECT_EQ(v->cols, decls[i].cols);
    EXPECT_EQ(v->rows, decls[i].rows);
    ASSERT_EQ(v->bytes(), data[i].size());
    EXPECT_EQ(std::memcmp(v->data, data[i].data(), data[i].size()), 0) << decls[i].name;
  }
}

}  // namespace
}  // namespace kquant_formats
}  // namespace fgemma
