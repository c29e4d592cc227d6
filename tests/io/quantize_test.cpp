// Row quantizers: hand-checked blocks, and bit-exact reproduction of the quantized fixture files
// (written by gguf-py from the float32 values of the bf16 weights).
#include "util/weight_types.h"

#include <gtest/gtest.h>

#include "model/synth.h"

#include <cmath>
#include <cstring>
#include <random>

#include "io/gguf.h"
#include "io_test_util.h"
#include "util/float_types.h"

namespace fgemma {
namespace {

uint16_t ScaleBits(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, 2);
  return d;
}

TEST(Quantize, Q8_0HandBlock) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i) - 16.0f;
  x[0] = -127.0f;  // amax 127 -> d = 1, id = 1
  x[1] = 2.5f;     // ties round away from zero
  x[2] = -2.5f;
  x[3] = 0.49999997f;
  uint8_t out[34];
  QuantizeRowQ8_0(x, 32, out);
  EXPECT_EQ(ScaleBits(out), F32ToF16(1.0f));
  const auto* q = reinterpret_cast<const int8_t*>(out + 2);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[1], 3);
  EXPECT_EQ(q[2], -3);
  EXPECT_EQ(q[3], 0);
  for (int i = 4; i < 32; ++i) EXPECT_EQ(q[i], i - 16);
}

TEST(Quantize, Q4_0HandBlock) {
  float x[32] = {};
  x[5] = 4.0f;
  x[6] = -4.0f;  // same magnitude, later: the first (+4) defines the scale
  x[7] = 1.0f;
  x[20] = -0.26f;
  uint8_t out[18];
  QuantizeRowQ4_0(x, 32, out);
  // d = 4 / -8 = -0.5, id = -2: q = trunc(x * -2 + 8.5), clamped to 15.
  EXPECT_EQ(ScaleBits(out), F32ToF16(-0.5f));
  auto nib = [&](int i) { return i < 16 ? out[2 + i] & 0x0f : out[2 + i - 16] >> 4; };
  EXPECT_EQ(nib(5), 0);   // 4 * -2 + 8.5 = 0.5
  EXPECT_EQ(nib(6), 15);  // -4 * -2 + 8.5 = 16.5 -> clamped
  EXPECT_EQ(nib(7), 6);   // 6.5
  EXPECT_EQ(nib(20), 9);  // 9.02
  EXPECT_EQ(nib(0), 8);   // zeros sit at 8
  float back[32];
  TensorView v{DType::kQ4_0, 1, 32, out};
  DequantizeRow(v, 0, back);
  EXPECT_EQ(back[5], 4.0f);
  EXPECT_EQ(back[6], -3.5f);
}

TEST(Quantize, ZeroBlocks) {
  float x[64] = {};
  uint8_t q8[68], q4[36];
  QuantizeRowQ8_0(x, 64, q8);
  QuantizeRowQ4_0(x, 64, q4);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(ScaleBits(q8 + 34 * b), 0);
    EXPECT_EQ(ScaleBits(q4 + 18 * b), 0x8000);  // 0 / -8 = -0.0, as in ggml
    for (int i = 0; i < 32; ++i) EXPECT_EQ(q8[34 * b + 2 + i], 0);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(q4[18 * b + 2 + i], 0x88);
  }
}

TEST(Quantize, NonFiniteInputIsSafe) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i);
  x[3] = NAN;
  x[4] = INFINITY;
  uint8_t out[34];
  QuantizeRowQ8_0(x, 32, out);  // no UB (the asan preset traps float-cast overflow)
  QuantizeRowQ4_0(x, 32, out);
  SUCCEED();
}

TEST(Quantize, ErrorIsBoundedByHalfAStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> x(4096);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> q8(RowBytes(DType::kQ8_0, x.size())), q4(RowBytes(DType::kQ4_0, x.size()));
  ASSERT_TRUE(QuantizeRow(DType::kQ8_0, x.data(), x.size(), q8.data()).ok());
  ASSERT_TRUE(QuantizeRow(DType::kQ4_0, x.data(), x.size(), q4.data()).ok());
  std::vector<float> y8(x.size()), y4(x.size());
  DequantizeRow(TensorView{DType::kQ8_0, 1, x.size(), q8.data()}, 0, y8.data());
  DequantizeRow(TensorView{DType::kQ4_0, 1, x.size(), q4.data()}, 0, y4.data());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    for (int i = 0; i < 32; ++i) {
      const size_t k = b * 32 + i;
      // Half a step, plus the f16 rounding of the scale (relative 2^-11, times up to 127 steps).
      EXPECT_LE(std::fabs(y8[k] - x[k]), amax / 127 * (0.5f + 127.0f / 2048)) << k;
      EXPECT_LE(std::fabs(y4[k] - x[k]), amax / 8 * 1.01f) << k;  // the clamped top bin errs by up to a step
    }
  }
}

TEST(Quantize, FloatConversions) {
  const float x[4] = {1.0f, 1.0f + 1.0f / 256, 65520.0f, -0.1f};
  uint16_t f16[4], bf16[4];
  ASSERT_TRUE(QuantizeRow(DType::kF16, x, 4, f16).ok());
  ASSERT_TRUE(QuantizeRow(DType::kBF16, x, 4, bf16).ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(f16[i], F32ToF16(x[i]));
    EXPECT_EQ(bf16[i], F32ToBf16(x[i]));
  }
  EXPECT_EQ(bf16[1], 0x3f80);  // tie to even
  EXPECT_EQ(f16[2], 0x7c00);   // overflow to inf
  float copy[4];
  ASSERT_TRUE(QuantizeRow(DType::kF32, x, 4, copy).ok());
  EXPECT_EQ(std::memcmp(copy, x, sizeof(x)), 0);
}

TEST(Quantize, RejectsPartialBlocks) {
  float x[33] = {};
  uint8_t out[2 * 33];
  const Status s = QuantizeRow(DType::kQ8_0, x, 33, out);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(test::Contains(s.message(), "not a multiple of its block size 32")) << s.ToString();
  EXPECT_TRUE(QuantizeRow(DType::kBF16, x, 33, out).ok());
}

// Quantizing the float32 values of every bf16 weight reproduces the quantized files byte for byte.
void ExpectQuantizedFileMatches(const std::string& type, DType dtype) {
  GgufFile src = test::OpenMiniGguf("bf16");
  GgufFile want = test::OpenMiniGguf(type);
  int quantized = 0;
  for (const GgufTensorInfo& t : src.tensors()) {
    SCOPED_TRACE(std::string(t.name));
    const GgufTensorInfo* w = want.FindTensor(t.name);
    ASSERT_NE(w, nullptr);
    if (t.ggml_type == ggml_type::kF32) {  // norms stay float32 (1 + w)
      ASSERT_EQ(w->ggml_type, ggml_type::kF32);
      continue;
    }
    ASSERT_EQ(w->ggml_type, GgmlTypeFromDType(dtype));
    auto view = src.GetTensorView(t);
    ASSERT_TRUE(view.ok());
    const size_t row_bytes = RowBytes(dtype, view->cols);
    std::vector<uint8_t> out(row_bytes);
    size_t bad_rows = 0;
    for (size_t r = 0; r < view->rows; ++r) {
      const std::vector<float> row = test::RowAsFloats(*view, r);
      ASSERT_TRUE(QuantizeRow(dtype, row.data(), row.size(), out.data()).ok());
      if (std::memcmp(out.data(), want.TensorData(*w) + r * row_bytes, row_bytes) != 0) {
        if (bad_rows++ < 3) ADD_FAILURE() << "row " << r << " differs";
      }
    }
    EXPECT_EQ(bad_rows, 0u);
    ++quantized;
  }
  EXPECT_EQ(quantized, 57);
}

TEST(Quantize, ReproducesMiniQ8_0) { ExpectQuantizedFileMatches("q8_0", DType::kQ8_0); }
TEST(Quantize, ReproducesMiniQ4_0) { ExpectQuantizedFileMatches("q4_0", DType::kQ4_0); }

// SYNTH.md's float32 weights (model/synth.h), rounded to bf16 by ConvertRowBf16, reproduce mini-bf16.gguf.
TEST(Quantize, Bf16ConversionReproducesSynthCheckpoint) {
  EXPECT_EQ(Fnv1a64("model.norm.weight"), 0xd6d6e5afd11604e4ull);
  EXPECT_FLOAT_EQ(SynthValue(Fnv1a64("model.norm.weight"), 1, 0, 0.5), -0.14862537f);

  GgufFile f = test::OpenMiniGguf("bf16");
  constexpr uint64_t kSeed = 3;
  constexpr int kHidden = 64;
  struct Case {
    std::string gguf, hf;
    double amp;
  };
  std::vector<Case> cases = {{"token_embd.weight", "model.embed_tokens.weight", 2.5 / std::sqrt(double{kHidden})},
                             {"output_norm.weight", "model.norm.weight", 0.5}};
  for (int layer = 0; layer < 8; ++layer) {
    for (const auto& n : test::kGemma3LayerTensors) {
      const std::string gguf = "blk." + std::to_string(layer) + "." + n.gguf + ".weight";
      const std::string hf = "model.layers." + std::to_string(layer) + "." + n.hf + ".weight";
      const GgufTensorInfo* t = f.FindTensor(gguf);
      ASSERT_NE(t, nullptr) << gguf;
      double amp = 0.5;
      if (t->n_dims == 2) amp = std::sqrt(3.0 / static_cast<double>(t->ne[0]));
      if (std::string(n.hf).starts_with("post_")) amp = 4.0;
      cases.push_back({gguf, hf, amp});
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.gguf);
    const GgufTensorInfo* t = f.FindTensor(c.gguf);
    ASSERT_NE(t, nullptr);
    const uint64_t h = Fnv1a64(c.hf);
    std::vector<float> w(t->n_elements);
    for (uint64_t i = 0; i < t->n_elements; ++i) w[i] = SynthValue(h, kSeed, i, c.amp);
    std::vector<uint16_t> bf16(w.size());
    ConvertRowBf16(w.data(), w.size(), bf16.data());
    if (t->ggml_type == ggml_type::kBF16) {
      EXPECT_EQ(std::memcmp(bf16.data(), f.TensorData(*t), t->n_bytes), 0);
    } else {  // norms: 1 + bf16(w), in float32
      for (size_t i = 0; i < w.size(); ++i) {
        float stored;
        std::memcpy(&stored, f.TensorData(*t) + 4 * i, 4);
        ASSERT_EQ(stored, 1.0f + Bf16ToF32(bf16[i])) << i;
      }
    }
  }
}

// The weight table agrees with ggml's type layouts as the GGUF reader reports them, and every
// name and id maps back to its row.
TEST(WeightTypes, TableAgreesWithGgufAndNames) {
  for (const WeightTypeInfo& w : kWeightTypes) {
    uint32_t block_size = 0, block_bytes = 0;
    ASSERT_TRUE(GgmlTypeLayout(w.ggml_type, &block_size, &block_bytes)) << w.name;
    EXPECT_EQ(block_size, w.block_size) << w.name;
    EXPECT_EQ(block_bytes, w.block_bytes) << w.name;
    EXPECT_STREQ(GgmlTypeName(w.ggml_type), w.ggml_name);
    EXPECT_EQ(DTypeFromGgmlType(w.ggml_type).value(), w.dtype);
    EXPECT_EQ(GgmlTypeFromDType(w.dtype), w.ggml_type);
    EXPECT_EQ(DTypeFromName(w.name).value(), w.dtype);
    EXPECT_EQ(DTypeIsQuantized(w.dtype), w.int8_activations) << w.name;
  }
  EXPECT_EQ(DTypeFromGgmlType(11).status().code(), ErrorCode::kUnsupported);  // Q3_K
}

}  // namespace
}  // namespace fgemma
