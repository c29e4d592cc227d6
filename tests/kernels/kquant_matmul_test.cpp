// MatMul on q4_1, q5_0, q5_1, q4_K, q5_K and q6_K weights (kernels/matmul_kquant.cpp), on every SIMD
// target this machine runs: the expanded rows equal the format's decoder; outputs stay within the
// activation-rounding bound of the float reference (as q8_0 / q4_0, kernels/matmul_quant.cpp); a
// batch equals its tokens one at a time, any row split equals the whole matrix, the stored layout
// equals the expanded copy, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"

namespace fgemma {
namespace kquant_matmul {
namespace {

using kernels_internal::ExpandedRowBytes;
using kernels_internal::ExpandRows;
using kernels_internal::InterleavedWeightBytes;
using kernels_internal::InterleaveWeights;

constexpr DType kTypes[] = {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

class KQuantTarget : public test::TargetTest {};

// Weights of `type` quantized from Gaussian values (a few large), stored `offset` bytes into their
// buffer (misaligned rows); `expanded` set to the expanded copy when asked.
struct Weights {
  std::vector<uint8_t> storage, copy;
  KernelMatrix view;
};

Weights MakeWeights(DType type, size_t rows, size_t cols, size_t offset, bool expanded, std::mt19937& rng) {
  Weights w;
  w.view.dtype = type;
  w.view.rows = rows;
  w.view.cols = cols;
  w.storage.resize(w.view.bytes() + offset);
  w.view.data = w.storage.data() + offset;
  std::vector<float> x = test::RandomNormal(cols, rng);
  for (size_t r = 0; r < rows; ++r) {
    x = test::RandomNormal(cols, rng);
    x[r % cols] *= 8.0f;
    EXPECT_TRUE(QuantizeRow(type, x.data(), cols, w.storage.data() + offset + r * w.view.row_bytes()).ok());
  }
  if (expanded) {
    // The expanded copy, or (q5_0 on AVX2) 8-row panels of the same bytes as stored.
    const size_t bytes = kernels_internal::X86PanelType(type)
                             ? (rows + 7) / 8 * kernels_internal::Avx2PanelFormat().panel_bytes(type, cols)
                             : rows * ExpandedRowBytes(cols);
    EXPECT_EQ(InterleavedWeightBytes(w.view), bytes);
    w.copy.resize(InterleavedWeightBytes(w.view) + 1);
    InterleaveWeights(w.view, w.copy.data() + 1);  // misaligned too
    w.view.repacked = w.copy.data() + 1;
  }
  return w;
}

struct Inputs {
  std::vector<float> x;
  std::vector<uint8_t> packed;
  Activations a;
};

Inputs MakeInputs(size_t tokens, size_t cols, std::mt19937& rng) {
  Inputs in;
  in.x = test::RandomNormal(tokens * cols, rng);
  for (size_t i = 0; i < in.x.size(); i += 61) in.x[i] *= 30.0f;  // outlier channels
  in.a.data = in.x.data();
  in.a.stride = cols;
  in.a.num_tokens = tokens;
  in.packed.resize(PackedActivationBytes(DType::kQ4_K, cols, tokens));
  PackActivations(DType::kQ4_K, cols, &in.a, in.packed.data());
  return in;
}

// Token t of `in` alone, packed.
struct OneToken {
  OneToken(DType type, const Inputs& in, size_t t, size_t cols) : packed(PackedActivationBytes(type, cols, 1)) {
    a.data = in.x.data() + t * cols;
    a.stride = cols;
    a.num_tokens = 1;
    PackActivations(type, cols, &a, packed.data());
  }
  std::vector<uint8_t> packed;
  Activations a;
};

size_t ColsFor(DType type, size_t i) {
  const size_t k_cols[] = {256, 1024, 512}, legacy_cols[] = {32, 640, 96};
  return WeightType(type).block_size == 256 ? k_cols[i] : legacy_cols[i];
}

// Each expanded value (scale * level + min) is the decoder's value.
TEST(KQuantExpand, MatchesTheDecoder) {
  std::mt19937 rng(5);
  for (DType type : kTypes) {
    const size_t rows = 3, cols = ColsFor(type, 1);
    Weights w = MakeWeights(type, rows, cols, 0, false, rng);
    std::vector<uint8_t> expanded(rows * ExpandedRowBytes(cols));
    ExpandRows(w.view, 0, rows, expanded.data());
    std::vector<float> decoded(cols);
    for (size_t r = 0; r < rows; ++r) {
      DequantizeRow(w.view, r, decoded.data());
      const uint8_t* row = expanded.data() + r * ExpandedRowBytes(cols);
      for (size_t k = 0; k < cols; ++k) {
        float scale, min;
        std::memcpy(&scale, row + cols + k / 16 * 4, 4);
        std::memcpy(&min, row + cols + cols / 16 * 4 + k / 32 * 4, 4);
        const float v = scale * static_cast<float>(static_cast<int8_t>(row[k])) + min;
        ASSERT_NEAR(v, decoded[k], 1e-6f * std::fabs(decoded[k])) << DTypeName(type) << " row " << r << " col " << k;
      }
    }
  }
}

// Against the float reference: the activations' int8 rounding (at most amax_b / 254 an element) is
// the only approximation beyond float32 rounding.
TEST_P(KQuantTarget, WithinActivationRoundingOfFloatReference) {
  std::mt19937 rng(11);
  for (DType type : kTypes) {
    for (size_t shape = 0; shape < 3; ++shape) {
      const size_t cols = ColsFor(type, shape), rows = 1 + 8 * shape, tokens = 1 + 3 * shape;
      Weights w = MakeWeights(type, rows, cols, shape, shape != 1, rng);
      Inputs in = MakeInputs(tokens, cols, rng);
      std::vector<float> y(tokens * rows), ref(tokens * rows);
      MatMul(w.view, in.a, y.data(), rows, 0, rows);
      MatMulReference(w.view, in.a, ref.data(), rows, 0, rows);
      std::vector<float> row(cols);
      for (size_t r = 0; r < rows; ++r) {
        DequantizeRow(w.view, r, row.data());
        for (size_t t = 0; t < tokens; ++t) {
          const float* x = in.x.data() + t * cols;
          double bound = 0, s = 0;
          for (size_t b = 0; b < cols / 32; ++b) {
            double amax = 0, wsum = 0;
            for (size_t k = 32 * b; k < 32 * b + 32; ++k) {
              amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
              wsum += std::fabs(row[k]);
              s += std::fabs(static_cast<double>(row[k]) * x[k]);
            }
            bound += amax / 254 * wsum * (1 + 1.0 / 1024);
          }
          bound += 4 * (cols + 8) * s / (1 << 24);
          ASSERT_LE(std::fabs(y[t * rows + r] - ref[t * rows + r]), bound)
              << DTypeName(type) << " cols " << cols << " row " << r << " token " << t;
        }
      }
    }
  }
}

// The exactness contracts: batch = tokens one at a time; any row split = the whole matrix; the stored
// layout (expanded on the fly) = the expanded copy; MatMulRows = those rows of the whole matrix.
TEST_P(KQuantTarget, BatchSplitAndLayoutGiveTheSameBits) {
  std::mt19937 rng(23);
  for (DType type : kTypes) {
    const size_t rows = 37, cols = ColsFor(type, 1), tokens = 9;
    Weights copy = MakeWeights(type, rows, cols, 3, true, rng);
    KernelMatrix stored = copy.view;
    stored.repacked = nullptr;
    Inputs in = MakeInputs(tokens, cols, rng);
    std::vector<float> whole(tokens * rows);
    MatMul(copy.view, in.a, whole.data(), rows, 0, rows);
    // Stored layout, in uneven slices (not multiples of 16 rows).
    std::vector<float> sliced(tokens * rows, NAN);
    for (size_t r0 : {size_t{0}, size_t{5}, size_t{21}}) {
      const size_t r1 = r0 == 0 ? 5 : (r0 == 5 ? 21 : rows);
      MatMul(stored, in.a, sliced.data(), rows, r0, r1);
    }
    for (size_t k = 0; k < whole.size(); ++k) ASSERT_EQ(sliced[k], whole[k]) << DTypeName(type) << " at " << k;
    // RowSlice of the copy, one token at a time.
    for (size_t t = 0; t < tokens; ++t) {
      const OneToken token(type, in, t, cols);
      const Activations& one = token.a;
      for (size_t r = 0; r < rows; r += 7) {
        const KernelMatrix slice = RowSlice(copy.view, r, std::min(rows, r + 7));
        // A slice keeps the copy unless it starts inside a panel (then its rows become panels on the fly).
        if (!kernels_internal::X86PanelType(type) || r % kernels_internal::kAvx2PanelRows == 0)
          ASSERT_NE(slice.repacked, nullptr);
        std::vector<float> y(slice.rows);
        MatMul(slice, one, y.data(), 0, 0, slice.rows);
        for (size_t i = 0; i < slice.rows; ++i) ASSERT_EQ(y[i], whole[t * rows + r + i]) << DTypeName(type);
      }
      if (t == 0) {
        const std::vector<int32_t> ids = {36, 0, 17, 17, 4};
        std::vector<float> got(ids.size());
        MatMulRows(copy.view, one, ids, got.data());
        for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(got[i], whole[static_cast<size_t>(ids[i])]) << DTypeName(type);
      }
    }
    // LookupRow decodes the stored row.
    std::vector<float> a(cols), b(cols);
    LookupRow(copy.view, 11, a.data());
    DequantizeRow(stored, 11, b.data());
    EXPECT_EQ(a, b);
  }
}

// A long batch runs in token blocks sized to L2 (about 30 tokens of 2048-wide rows) and in tiles of
// rows and tokens: each token of 70, with 2048 columns and 7 rows (whole tiles and a remainder), is
// what it is alone.
TEST_P(KQuantTarget, TokenBlocksAndTilesGiveTheSameBits) {
  std::mt19937 rng(29);
  for (DType type : kTypes) {
    const size_t rows = 7, cols = 2048, tokens = 70;
    Weights w = MakeWeights(type, rows, cols, 0, true, rng);
    Inputs in = MakeInputs(tokens, cols, rng);
    std::vector<float> all(tokens * rows);
    MatMul(w.view, in.a, all.data(), rows, 0, rows);
    for (size_t t = 0; t < tokens; ++t) {
      const OneToken token(type, in, t, cols);
      const Activations& one = token.a;
      std::vector<float> y(rows);
      MatMul(w.view, one, y.data(), 0, 0, rows);
      for (size_t r = 0; r < rows; ++r) ASSERT_EQ(y[r], all[t * rows + r]) << DTypeName(type) << " token " << t << " row " << r;
    }
  }
}

// On AVX2, products of few tokens (and any product without the expanded copy) read q5_0, q4_K and
// q6_K blocks in place, unpacked in registers: the same bits as the expanded kernel. Each count of
// 1-6 tokens against the expanded kernel's answer for those tokens (from a batch of 5 more, which
// reads the copy), row counts around the 2-row tiles, stored rows at odd addresses, every column
// count of ColsFor. Elsewhere both sides take the same path and agree trivially.
TEST_P(KQuantTarget, StoredBlocksEqualTheExpandedCopyBitForBit) {
  std::mt19937 rng(41);
  for (DType type : kTypes) {
    for (size_t shape = 0; shape < 3; ++shape) {
      const size_t cols = ColsFor(type, shape);
      for (size_t rows : {size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
        Weights w = MakeWeights(type, rows, cols, 1 + rows % 3, true, rng);
        KernelMatrix stored = w.view;
        stored.repacked = nullptr;
        for (size_t tokens = 1; tokens <= 6; ++tokens) {
          Inputs in = MakeInputs(tokens + 5, cols, rng);
          std::vector<float> copy((tokens + 5) * rows);
          MatMul(w.view, in.a, copy.data(), rows, 0, rows);  // more than 4 tokens: the expanded copy
          Activations first = in.a;
          first.num_tokens = tokens;
          std::vector<float> y(tokens * rows, NAN);
          MatMul(stored, first, y.data(), rows, 0, rows);
          for (size_t k = 0; k < y.size(); ++k) {
            ASSERT_EQ(y[k], copy[k]) << DTypeName(type) << " cols " << cols << " rows " << rows << " tokens " << tokens
                                     << " at " << k;
          }
          std::vector<float> with_copy(tokens * rows, NAN);
          MatMul(w.view, first, with_copy.data(), rows, 0, rows);
          ASSERT_EQ(with_copy, y) << DTypeName(type);
        }
      }
    }
  }
}

// On Arm (every target this CPU runs: NEON, NEON_DOTPROD, NEON_I8MM), the kernels of
// kernels/arm_kquant-inl.h, and on AVX2 the q5_0 panels (kernels/quant_panels_avx2-inl.h), give the
// bits of their scalar per-block fold, MatMulKQuantArmReference: row counts around the 4-row groups
// and 8-row panels, token counts around the token tiles, slices starting off a group or panel,
// misaligned copies and outputs, the stored layout.
TEST_P(KQuantTarget, PerBlockFoldKernelsEqualTheirReferenceBitForBit) {
  const bool arm = kernels_internal::ArmKQuantActive();
  if (!arm && !kernels_internal::X86PanelType(DType::kQ5_0))
    GTEST_SKIP() << "no per-block fold kernel for these types on " << GetParam();
  std::mt19937 rng(37);
  for (DType type : kTypes) {
    if (!arm && !kernels_internal::X86PanelType(type)) continue;
    for (size_t shape = 0; shape < 3; ++shape) {
      const size_t cols = ColsFor(type, shape);
      for (size_t rows : {size_t{1}, size_t{3}, size_t{4}, size_t{9}, size_t{17}}) {
        for (size_t tokens : {size_t{1}, size_t{2}, size_t{5}, size_t{6}}) {
          if (shape == 1 && tokens > 2) continue;  // the widest shape: enough with two
          Weights w = MakeWeights(type, rows, cols, rows % 3, tokens % 2 == 1, rng);
          Inputs in = MakeInputs(tokens, cols, rng);
          const size_t row_begin = rows > 4 ? 1 : 0, y_stride = rows + 3, y_offset = tokens % 3;
          std::vector<float> y_store(tokens * y_stride + y_offset, NAN), ref(tokens * rows, NAN);
          float* y = y_store.data() + y_offset;
          MatMul(w.view, in.a, y, y_stride, row_begin, rows);
          kernels_internal::MatMulKQuantArmReference(w.view, in.a, ref.data(), rows, row_begin, rows);
          for (size_t t = 0; t < tokens; ++t) {
            for (size_t r = row_begin; r < rows; ++r) {
              ASSERT_EQ(y[t * y_stride + r], ref[t * rows + r])
                  << DTypeName(type) << " cols " << cols << " rows " << rows << " tokens " << tokens << " row " << r
                  << " token " << t;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, KQuantTarget, ::testing::ValuesIn(KernelTargets()), test::TargetParamName);

}  // namespace
}  // namespace kquant_matmul
}  // namespace fgemma
