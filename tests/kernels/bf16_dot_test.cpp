// bf16 weights on Arm's bf16 dot products (NEON_BF16, kernels/matmul_arm_bf16.cpp):
//   - BfDotAdd, the scalar reference of BFDOT / BFMMLA's arithmetic, on cases whose bits follow from
//     the Arm ARM's definition (round-to-odd, flushing, overflow, signed zeros) and against an
//     independent double-precision construction of round-to-odd (every build runs these);
//   - on NEON_BF16 (qemu-aarch64 -cpu max): the activation packing (BFCVTN) against the scalar
//     rounding, and MatMul against MatMulBf16DotReference bit for bit across sizes, tails, slices,
//     misalignment, token counts (bfmmla pairs, odd last tokens) and thread splits; the accuracy
//     against the float reference (activations rounded to bf16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"
#include "kernels/weight_prep.h"
#include "util/float_types.h"

namespace fgemma {
namespace {

using kernels_internal::BfDotAdd;
using kernels_internal::Bf16RecordBytes;
using test::TargetParamName;
using test::TargetTest;

uint16_t Bf(float f) {  // f must be a bf16 value
  const uint32_t u = FloatBits(f);
  EXPECT_EQ(u & 0xFFFFu, 0u) << f << " is not a bf16 value";
  return static_cast<uint16_t>(u >> 16);
}

TEST(BfDotAdd, ExactCases) {
  EXPECT_EQ(BfDotAdd(0.0f, Bf(1.0f), Bf(2.0f), Bf(3.0f), Bf(4.0f)), 11.0f);
  EXPECT_EQ(BfDotAdd(-11.0f, Bf(1.0f), Bf(2.0f), Bf(3.0f), Bf(4.0f)), 0.0f);
  EXPECT_EQ(FloatBits(BfDotAdd(-11.0f, Bf(1.0f), Bf(2.0f), Bf(3.0f), Bf(4.0f))), 0u);  // x + (-x) = +0
  // -0 + (-0 + -0) stays -0; +0 + (-0) is +0.
  EXPECT_EQ(FloatBits(BfDotAdd(-0.0f, Bf(-1.0f), Bf(1.0f), Bf(0.0f), Bf(-0.0f))), 0x80000000u);
  EXPECT_EQ(FloatBits(BfDotAdd(0.0f, Bf(-1.0f), Bf(1.0f), Bf(0.0f), Bf(-0.0f))), 0u);
  // A bf16 product is exact in single precision: 255/128 squared.
  const float a = FloatFromBits(0x3FFF0000u);  // 1.9921875
  EXPECT_EQ(BfDotAdd(0.0f, Bf(a), Bf(0.0f), Bf(a), Bf(0.0f)), a * a);
}

TEST(BfDotAdd, RoundsToOdd) {
  // 1 + 2^-30: truncated to 1, inexact: the last bit set (round to nearest would give 1).
  EXPECT_EQ(FloatBits(BfDotAdd(1.0f, Bf(0x1p-15f), Bf(0.0f), Bf(0x1p-15f), Bf(0.0f))), 0x3F800001u);
  // 1 - 2^-30: truncated toward zero to 1 - 2^-24, already odd.
  EXPECT_EQ(FloatBits(BfDotAdd(1.0f, Bf(-0x1p-15f), Bf(0.0f), Bf(0x1p-15f), Bf(0.0f))), 0x3F7FFFFFu);
  // 1 + 3 * 2^-25 (a tie and more under nearest): truncated 1, odd 1 + 2^-23.
  EXPECT_EQ(FloatBits(BfDotAdd(1.0f, Bf(0x1p-24f), Bf(0x1p-25f), Bf(1.0f), Bf(1.0f))), 0x3F800001u);
  // The pair's own sum rounds to odd before the accumulation: 2^20 + 2^-10 is inexact (odd:
  // 2^20 + 2^-3), then 2^20 + 2^-3 - 2^20 = 2^-3 exactly.
  EXPECT_EQ(BfDotAdd(-0x1p20f, Bf(0x1p10f), Bf(0x1p-5f), Bf(0x1p10f), Bf(0x1p-5f)), 0x1p-3f);
  // 2^24 + (1 + 2): the pair exact (3), then 2^24 + 3 (ulp 2) truncates to 2^24 + 2 = 0x4B800001,
  // whose last bit is already set.
  EXPECT_EQ(FloatBits(BfDotAdd(0x1p24f, Bf(1.0f), Bf(2.0f), Bf(1.0f), Bf(1.0f))), 0x4B800001u);
}

TEST(BfDotAdd, FlushesAndOverflows) {
  // Products below 2^-126 flush to zero (of their sign), subnormal bf16 inputs count as zero.
  EXPECT_EQ(FloatBits(BfDotAdd(0.0f, Bf(0x1p-70f), Bf(0.0f), Bf(0x1p-70f), Bf(0.0f))), 0u);
  EXPECT_EQ(FloatBits(BfDotAdd(-0.0f, Bf(-0x1p-70f), Bf(-0.0f), Bf(0x1p-70f), Bf(0.0f))), 0x80000000u);
  EXPECT_EQ(BfDotAdd(0.0f, 0x0001, Bf(0.0f), Bf(1.0f), Bf(0.0f)), 0.0f);
  EXPECT_EQ(BfDotAdd(0.0f, 0x007F, Bf(0.0f), Bf(0x1p100f), Bf(0.0f)), 0.0f);  // would be 2^-27 unflushed
  // A sum below 2^-126 flushes too: 2^-125 - 1.9921875 * 2^-126 = 2^-133 (both products normal).
  EXPECT_EQ(FloatBits(BfDotAdd(0.0f, Bf(0x1p-63f), Bf(-0x1.fep-63f), Bf(0x1p-62f), Bf(0x1p-63f))), 0u);
  // Overflow of a product or a sum: infinity (round-to-odd keeps the largest finite value only below 2^128).
  EXPECT_EQ(BfDotAdd(0.0f, Bf(0x1p127f), Bf(0.0f), Bf(4.0f), Bf(0.0f)), INFINITY);
  EXPECT_EQ(BfDotAdd(0x1.fffffep127f, Bf(0x1p127f), Bf(0.0f), Bf(1.0f), Bf(0.0f)), INFINITY);
  EXPECT_EQ(FloatBits(BfDotAdd(0x1.fffffep127f, Bf(0x1p100f), Bf(0.0f), Bf(1.0f), Bf(0.0f))), 0x7F7FFFFFu);
  EXPECT_EQ(FloatBits(BfDotAdd(INFINITY, Bf(-INFINITY), Bf(0.0f), Bf(1.0f), Bf(0.0f))), 0x7FC00000u);
  EXPECT_EQ(FloatBits(BfDotAdd(0.0f, Bf(INFINITY), Bf(0.0f), Bf(0.0f), Bf(0.0f))), 0x7FC00000u);
}

// Round-to-odd of a + b from the exact double sum (the caller keeps the exponents within 28 of
// each other: exact in double).
float RoundToOddFromDouble(float a, float b) {
  const double d = static_cast<double>(a) + static_cast<double>(b);
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return FloatFromBits(FloatBits(f) | 1u);
}

TEST(BfDotAdd, AgreesWithRoundToOddInDouble) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits16(0, 0xFFFF);
  std::uniform_int_distribution<int> exp(-6, 6);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  size_t inexact = 0;
  for (int i = 0; i < 200000; ++i) {
    // bf16 values of moderate exponents; a sum of a similar size.
    auto value = [&] {
      const uint32_t mant = bits16(rng) & 0x807F;  // sign and 7 significand bits
      return static_cast<uint16_t>(mant | static_cast<uint32_t>(127 + exp(rng)) << 7);
    };
    const uint16_t w0 = value(), w1 = value(), x0 = value(), x1 = value();
    const float sum = std::ldexp(normal(rng), exp(rng));
    const float p0 = Bf16ToF32(w0) * Bf16ToF32(x0), p1 = Bf16ToF32(w1) * Bf16ToF32(x1);  // exact
    auto close = [](float a, float b) {
      int ea, eb;
      std::frexp(a, &ea);
      std::frexp(b, &eb);
      return a == 0 || b == 0 || std::abs(ea - eb) <= 28;
    };
    if (!close(p0, p1)) continue;
    const float pair = RoundToOddFromDouble(p0, p1);
    if (!close(sum, pair)) continue;
    const float want = RoundToOddFromDouble(sum, pair);
    const float got = BfDotAdd(sum, w0, w1, x0, x1);
    ASSERT_EQ(FloatBits(got), FloatBits(want)) << i << ": " << sum << " + " << p0 << " + " << p1;
    inexact += FloatBits(got) & 1;
  }
  EXPECT_GT(inexact, 50000u);  // the rounding was exercised
}

TEST(PackBf16, RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x3F808000u)), 0x3F80);  // tie to even
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x3F818000u)), 0x3F82);  // tie to even (up)
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x7F7FFFFFu)), 0x7F80);  // rounds up to infinity
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x00018000u)), 0x0002);  // subnormals round too
  EXPECT_EQ(F32ToBf16(FloatFromBits(0x7F800001u)), 0x7FC0);  // a signalling NaN quietened
}

// Values the packing must convert as BFCVTN does: random, huge, tiny, subnormal, ties, infinities.
std::vector<float> PackingValues(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> any(0, 0xFFFFFFFFu);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = any(rng);
    switch (i % 6) {
      case 0: break;                                         // any bits (NaNs included)
      case 1: u = (u & 0x807FFFFFu) | 0x3F000000u; break;   // around 1
      case 2: u &= 0x807FFFFFu; break;                      // subnormal
      case 3: u = (u & 0xFFFF0000u) | 0x8000u; break;       // a tie
      case 4: u = (u & 0x80000000u) | 0x7F7FF000u | (u & 0xFFFu); break;  // near the largest
      default: u = (u & 0x80000000u) | 0x7F800000u; break;  // infinity
    }
    v[i] = FloatFromBits(u);
  }
  return v;
}

class Bf16DotTest : public TargetTest {
 protected:
  void SetUp() override {
    TargetTest::SetUp();
    if (!kernels_internal::ArmBf16Active()) GTEST_SKIP() << KernelTargetName() << " has no bf16 dot-product kernels";
  }
};

TEST_P(Bf16DotTest, PackingEqualsScalarRounding) {
  std::mt19937 rng(11);
  for (size_t cols : {1, 7, 8, 9, 16, 33, 100, 640}) {
    const size_t tokens = 3, stride = cols + 5;
    std::vector<float> x = PackingValues(tokens * stride, rng);
    Activations a;
    a.data = x.data();
    a.stride = stride;
    a.num_tokens = tokens;
    ASSERT_EQ(PackedActivationBytes(DType::kBF16, cols, tokens), Bf16RecordBytes(cols) * tokens);
    std::vector<uint8_t> got(Bf16RecordBytes(cols) * tokens, 0xAB), want(got.size(), 0xCD);
    PackActivations(DType::kBF16, cols, &a, got.data());
    ASSERT_EQ(a.packed_stride, Bf16RecordBytes(cols));
    kernels_internal::PackBf16(cols, x.data(), stride, tokens, want.data());
    ASSERT_EQ(got, want) << "cols " << cols;
  }
}

struct Bf16Matrix {
  std::vector<uint8_t> storage, panels;
  KernelMatrix view;
};

Bf16Matrix MakeBf16(size_t rows, size_t cols, size_t offset, std::mt19937& rng) {
  Bf16Matrix m;
  m.view.dtype = DType::kBF16;
  m.view.rows = rows;
  m.view.cols = cols;
  m.storage.resize(rows * cols * 2 + offset);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  uint8_t* p = m.storage.data() + offset;
  for (size_t i = 0; i < rows * cols; ++i) {
    const uint16_t h = F32ToBf16(normal(rng) * (i % 97 == 0 ? 40.0f : 1.0f));
    std::memcpy(p + 2 * i, &h, 2);
  }
  m.view.data = p;
  const size_t bytes = kernels_internal::InterleavedWeightBytes(m.view);
  EXPECT_GT(bytes, 0u);
  m.panels.resize(bytes + 64);
  uint8_t* aligned = m.panels.data() + (64 - reinterpret_cast<uintptr_t>(m.panels.data()) % 64) % 64;
  kernels_internal::InterleaveWeights(m.view, aligned);
  m.view.repacked = aligned;
  return m;
}

// MatMul (the panels, bfdot / bfmmla) equals the scalar definition bit for bit.
void ExpectExact(const KernelMatrix& w, size_t tokens, size_t row_begin, size_t row_end, size_t x_offset,
                 size_t x_extra, size_t y_offset, bool pack, std::mt19937& rng) {
  SCOPED_TRACE("rows " + std::to_string(w.rows) + " cols " + std::to_string(w.cols) + " tokens " +
               std::to_string(tokens) + " slice [" + std::to_string(row_begin) + ", " + std::to_string(row_end) + ")");
  const size_t stride = w.cols + x_extra;
  std::vector<float> xs = test::RandomNormal((tokens - 1) * stride + w.cols + x_offset, rng);
  for (size_t i = 0; i < xs.size(); i += 31) xs[i] *= 50.0f;  // outliers, as real hidden states
  Activations a;
  a.data = xs.data() + x_offset;
  a.stride = stride;
  a.num_tokens = tokens;
  std::vector<uint8_t> packed(PackedActivationBytes(DType::kBF16, w.cols, tokens));
  if (pack) PackActivations(DType::kBF16, w.cols, &a, packed.data());
  const float kSentinel = -7777.0f;
  const size_t y_stride = w.rows + 3;
  std::vector<float> y((tokens - 1) * y_stride + w.rows + y_offset, kSentinel);
  MatMul(w, a, y.data() + y_offset, y_stride, row_begin, row_end);
  Activations ra = a;
  std::vector<uint8_t> ref_pack(Bf16RecordBytes(w.cols) * tokens);
  kernels_internal::PackBf16(w.cols, a.data, a.stride, tokens, ref_pack.data());
  ra.packed = ref_pack.data();
  ra.packed_stride = Bf16RecordBytes(w.cols);
  std::vector<float> want(tokens * w.rows, 0.0f);
  kernels_internal::MatMulBf16DotReference(w, ra, want.data(), w.rows, row_begin, row_end);
  for (size_t t = 0; t < tokens; ++t) {
    for (size_t r = 0; r < w.rows; ++r) {
      const float got = y[y_offset + t * y_stride + r];
      if (r < row_begin || r >= row_end) {
        ASSERT_EQ(got, kSentinel) << "wrote outside the slice at r=" << r << " t=" << t;
      } else {
        ASSERT_EQ(FloatBits(got), FloatBits(want[t * w.rows + r])) << "r=" << r << " t=" << t << " got " << got << " want "
                                                         << want[t * w.rows + r];
      }
    }
  }
}

TEST_P(Bf16DotTest, EqualsReferenceAcrossShapes) {
  std::mt19937 rng(21);
  const size_t cols_list[] = {1, 2, 15, 16, 17, 33, 47, 64, 100, 640, 2048};
  const std::pair<size_t, size_t> rows_tokens[] = {{1, 1},  {3, 2},  {4, 4},  {5, 3},   {8, 1},  {17, 5},
                                                   {33, 9}, {9, 16}, {6, 17}, {12, 33}, {37, 2}, {4, 40}};
  size_t i = 0;
  for (size_t cols : cols_list) {
    for (auto [rows, tokens] : rows_tokens) {
      if (cols >= 640 && rows * tokens > 150) continue;  // keep the reference cheap
      ++i;
      Bf16Matrix m = MakeBf16(rows, cols, i % 2 * 2, rng);
      ExpectExact(m.view, tokens, 0, rows, i % 3, i % 2 ? 0 : 5, i % 4, i % 5 != 0, rng);
      if (HasFatalFailure()) return;
    }
  }
  // Token pairs zipped a scratch-full at a time (2048 columns: 8 pairs, so 18 pairs take three
  // rounds), and rows too long for a pair in the scratch (bfdot for every token).
  for (auto [rows, cols, tokens] : {std::tuple<size_t, size_t, size_t>{4, 2048, 37}, {5, 2048, 18}, {3, 16400, 3}}) {
    Bf16Matrix m = MakeBf16(rows, cols, 0, rng);
    ExpectExact(m.view, tokens, 0, rows, 1, 0, 0, true, rng);
    if (HasFatalFailure()) return;
  }
}

TEST_P(Bf16DotTest, SlicesAndThreadSplitsChangeNoBit) {
  std::mt19937 rng(22);
  const size_t rows = 67, cols = 100;
  Bf16Matrix m = MakeBf16(rows, cols, 0, rng);
  // Slices starting anywhere (not only on a panel), each against the reference.
  const std::pair<size_t, size_t> slices[] = {{5, 43}, {13, 14}, {0, 67}, {16, 32}, {66, 67}, {3, 10}, {1, 2}};
  size_t i = 0;
  for (auto [rb, re] : slices) {
    for (size_t tokens : {1, 2, 7, 18}) {
      ++i;
      ExpectExact(m.view, tokens, rb, re, i % 3, i % 2 ? 0 : 9, i % 4, i % 3 != 0, rng);
      if (HasFatalFailure()) return;
    }
  }
  // One product against the same cut into row slices (as threads take them) and the tokens one at a
  // time: the same bits.
  const size_t tokens = 21;
  std::vector<float> xs = test::RandomNormal(tokens * cols, rng);
  Activations a;
  a.data = xs.data();
  a.stride = cols;
  a.num_tokens = tokens;
  std::vector<uint8_t> packed(PackedActivationBytes(DType::kBF16, cols, tokens));
  PackActivations(DType::kBF16, cols, &a, packed.data());
  std::vector<float> whole(tokens * rows), split(tokens * rows), single(tokens * rows);
  MatMul(m.view, a, whole.data(), rows, 0, rows);
  for (size_t cut : {1, 4, 7, 16, 33, 64}) {
    MatMul(m.view, a, split.data(), rows, 0, cut);
    MatMul(RowSlice(m.view, cut / 4 * 4, rows), a, split.data() + cut / 4 * 4, rows, cut - cut / 4 * 4,
           rows - cut / 4 * 4);
    ASSERT_EQ(split, whole) << "cut at " << cut;
  }
  for (size_t t = 0; t < tokens; ++t) {
    Activations one;
    one.data = xs.data() + t * cols;
    one.stride = cols;
    one.num_tokens = 1;
    std::vector<uint8_t> p1(PackedActivationBytes(DType::kBF16, cols, 1));
    PackActivations(DType::kBF16, cols, &one, p1.data());
    MatMul(m.view, one, single.data() + t * rows, rows, 0, rows);
  }
  ASSERT_EQ(single, whole);
  // The head's restricted rows and token lookups read the panels.
  const std::vector<int32_t> ids = {66, 3, 4, 17, 16, 3, 0, 64, 33};
  Activations first = a;
  first.num_tokens = 1;
  std::vector<float> got(ids.size());
  MatMulRows(m.view, first, ids, got.data());
  for (size_t k = 0; k < ids.size(); ++k) ASSERT_EQ(got[k], whole[static_cast<size_t>(ids[k])]) << "row " << ids[k];
  std::vector<float> want(cols), row(cols);
  for (size_t r = 0; r < rows; ++r) {
    KernelMatrix stored = m.view;
    stored.repacked = nullptr;
    DequantizeRow(stored, r, want.data());
    LookupRow(m.view, r, row.data());
    ASSERT_EQ(row, want) << "row " << r;
  }
}

// Activations rounded to bf16 (relative error <= 2^-9 each) against the float reference: the error
// stays within 2^-8 of sum |w x| (plus the float steps), and is printed.
TEST_P(Bf16DotTest, AccuracyVsFloat) {
  std::mt19937 rng(23);
  const size_t rows = 256, cols = 640, tokens = 8;
  Bf16Matrix m = MakeBf16(rows, cols, 0, rng);
  std::vector<float> xs = test::RandomNormal(tokens * cols, rng);
  Activations a;
  a.data = xs.data();
  a.stride = cols;
  a.num_tokens = tokens;
  std::vector<float> y(tokens * rows), ref(tokens * rows);
  MatMul(m.view, a, y.data(), rows, 0, rows);
  KernelMatrix stored = m.view;
  stored.repacked = nullptr;
  MatMulReference(stored, a, ref.data(), rows, 0, rows);
  double err_sq = 0, ref_sq = 0;
  std::vector<float> w(cols);
  for (size_t r = 0; r < rows; ++r) {
    DequantizeRow(stored, r, w.data());
    for (size_t t = 0; t < tokens; ++t) {
      double s = 0;
      for (size_t k = 0; k < cols; ++k) s += std::fabs(static_cast<double>(w[k]) * xs[t * cols + k]);
      const double e = static_cast<double>(y[t * rows + r]) - ref[t * rows + r];
      ASSERT_LE(std::fabs(e), s * (0x1p-8 + (cols + 2) * 0x1p-23)) << "r=" << r << " t=" << t;
      err_sq += e * e;
      ref_sq += static_cast<double>(ref[t * rows + r]) * ref[t * rows + r];
    }
  }
  const double rel = std::sqrt(err_sq / ref_sq);
  std::printf("[ accuracy ] bf16 weights, bf16 activations (bfdot/bfmmla): relative RMS error %.2e\n", rel);
  EXPECT_LT(rel, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Targets, Bf16DotTest, ::testing::ValuesIn(KernelTargets()), TargetParamName);

}  // namespace
}  // namespace fgemma
