// MatMul against MatMulReference for every weight type, on every SIMD target this machine runs.
//
// Tolerances (u = 2^-24, the float32 unit roundoff):
//   float weights:  |y - ref| <= (cols + 8) u S, S = sum_k |w_k x_k| (any float32 summation order of
//                   cols products; +8 for the final lane tree), and the RMS of |y - ref| / S over a
//                   case must stay below 1e-6 (typical float32 lane-accumulation error).
//   quantized:      (1) against an exact-integer emulation built from the packed activations:
//                       |y - emu| <= 2 (nb + 8) u sum_b |dw_b dx_b| sum_{k in b} |wq_k xq_k|
//                       (the kernels scale partial int32 sums lane by lane, then accumulate and
//                       reduce in float32; the scale product adds one more rounding);
//                   (2) against the float reference: activation rounding is at most
//                       amax_b / 254 per element, so |y - ref| <= sum_b amax_b / 254 * sum_{k in b}
//                       |w_k| (1 + 2^-10) + (cols + 8) u S.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernel_test_support.h"
#include "kernels/matmul_internal.h"
#include "kernels/weight_prep.h"
#include "util/float_types.h"

namespace fgemma {
namespace {

constexpr double kU = 1.0 / (1 << 24);

using test::TargetParamName;
using test::TargetTest;
using kernels_internal::InterleavedWeightBytes;
using kernels_internal::InterleaveWeights;
using kernels_internal::InterleaveWeightsPortable;
using kernels_internal::MatMulInterleavedReference;

// Random weights of `dtype`, stored `offset` bytes into an over-allocated buffer.
struct Weights {
  std::vector<uint8_t> storage;
  KernelMatrix view;
};

Weights MakeWeights(DType dtype, size_t rows, size_t cols, size_t offset, std::mt19937& rng) {
  Weights w;
  w.view.dtype = dtype;
  w.view.rows = rows;
  w.view.cols = cols;
  w.storage.resize(w.view.bytes() + offset);  // exact: ASan builds catch over-reads
  uint8_t* p = w.storage.data() + offset;
  w.view.data = p;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  const size_t n = rows * cols;
  switch (dtype) {
    case DType::kF32:
      for (size_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        std::memcpy(p + 4 * i, &v, 4);
      }
      break;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        const uint16_t h = dtype == DType::kF16 ? F32ToF16(v) : F32ToBf16(v);
        std::memcpy(p + 2 * i, &h, 2);
      }
      break;
    case DType::kQ8_0:
    case DType::kQ4_0: {  // any scale sign, every quant value (including q8_0's -128)
      const size_t block_bytes = DTypeBlockBytes(dtype);
      for (size_t blk = 0; blk < n / 32; ++blk) {
        uint8_t* b = p + blk * block_bytes;
        const uint16_t h = F32ToF16(scale(rng));
        std::memcpy(b, &h, 2);
        for (size_t i = 2; i < block_bytes; ++i) b[i] = static_cast<uint8_t>(byte(rng));
      }
      break;
    }
    default:
      ADD_FAILURE() << "MakeWeights: no generator for " << DTypeName(dtype);
  }
  return w;
}

// Activations with `offset` floats of misalignment and `stride` >= cols; a few large outliers
// like real hidden states.
struct Inputs {
  std::vector<float> storage;
  Activations a;
};

Inputs MakeInputs(size_t num_tokens, size_t cols, size_t stride, size_t offset, std::mt19937& rng) {
  Inputs in;
  // Exact size (ASan catches over-reads); NaN padding between rows must never be read.
  in.storage.assign((num_tokens - 1) * stride + cols + offset, std::nanf(""));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> outlier(0, 63);
  float* x = in.storage.data() + offset;
  for (size_t t = 0; t < num_tokens; ++t) {
    for (size_t k = 0; k < cols; ++k) x[t * stride + k] = normal(rng) * (outlier(rng) == 0 ? 30.0f : 1.0f);
  }
  in.a.data = x;
  in.a.stride = stride;
  in.a.num_tokens = num_tokens;
  return in;
}

struct MatmulCase {
  DType dtype;
  size_t rows, cols, tokens;
  size_t row_begin, row_end;
  size_t w_offset = 0, x_offset = 0, x_extra = 0, y_offset = 0, y_extra = 0;
  bool pack = true;
  bool pack_as_other_type = false;  // q8_0 <-> q4_0: one packing must serve both
  bool zero_stride = false;         // a single token may come with stride 0
  bool interleave = false;          // give MatMul the row-interleaved copy (when the target uses one)
};

std::string Describe(const MatmulCase& c) {
  return std::string(DTypeName(c.dtype)) + " rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols) +
         " tokens=" + std::to_string(c.tokens) + " slice=[" + std::to_string(c.row_begin) + "," +
         std::to_string(c.row_end) + ") target=" + KernelTargetName();
}

// Exact-integer emulation of the quantized kernels from the packed activations; *abs_sum gets
// sum_b |dw_b dx_b| sum_k |wq_k xq_k|, the scale of its float rounding errors.
double QuantEmulation(const TensorView& w, const uint8_t* rec, size_t r, double* abs_sum) {
  const kernels_internal::QuantLayout layout = kernels_internal::QuantLayoutFor(w.cols);
  const uint8_t* row = w.row(r);
  const size_t bb = DTypeBlockBytes(w.dtype);
  double sum = 0;
  *abs_sum = 0;
  for (size_t b = 0; b < layout.blocks; ++b) {
    uint16_t h;
    std::memcpy(&h, row + b * bb, 2);
    float dx;
    std::memcpy(&dx, rec + layout.d8_offset + b * 32, 4);
    int64_t dot = 0, abs_dot = 0;
    for (size_t i = 0; i < 32; ++i) {
      int wq;
      if (w.dtype == DType::kQ8_0) {
        wq = static_cast<int8_t>(row[b * bb + 2 + i]);
      } else {
        const uint8_t byte = row[b * bb + 2 + i % 16];
        wq = (i < 16 ? byte & 15 : byte >> 4) - 8;
      }
      const int64_t p = static_cast<int64_t>(wq) * static_cast<int8_t>(rec[b * 32 + i]);
      dot += p;
      abs_dot += p < 0 ? -p : p;
    }
    const double scale = static_cast<double>(F16ToF32(h)) * dx;
    sum += scale * static_cast<double>(dot);
    *abs_sum += std::fabs(scale) * static_cast<double>(abs_dot);
  }
  return sum;
}

void RunCase(const MatmulCase& c, std::mt19937& rng) {
  SCOPED_TRACE(Describe(c) + (c.interleave ? " interleaved" : ""));
  Weights w = MakeWeights(c.dtype, c.rows, c.cols, c.w_offset, rng);
  std::vector<uint8_t> interleaved_store;
  const size_t interleaved_bytes = c.interleave ? InterleavedWeightBytes(w.view) : 0;
  if (interleaved_bytes > 0) {  // 64-byte aligned, exact size after that (ASan catches over-reads)
    interleaved_store.resize(interleaved_bytes + 64);
    const size_t pad = (64 - reinterpret_cast<uintptr_t>(interleaved_store.data()) % 64) % 64;
    interleaved_store.resize(interleaved_bytes + pad);
    InterleaveWeights(w.view, interleaved_store.data() + pad);
    w.view.repacked = interleaved_store.data() + pad;
  }
  Inputs in = MakeInputs(c.tokens, c.cols, c.cols + c.x_extra, c.x_offset, rng);
  if (c.zero_stride) in.a.stride = 0;
  std::vector<uint8_t> scratch;
  if (c.pack) {
    const DType pack_type =
        c.pack_as_other_type ? (c.dtype == DType::kQ8_0 ? DType::kQ4_0 : DType::kQ8_0) : c.dtype;
    scratch.resize(PackedActivationBytes(pack_type, c.cols, c.tokens));
    PackActivations(pack_type, c.cols, &in.a, scratch.data());
  }
  const size_t y_stride = c.rows + c.y_extra;
  const float kSentinel = -12345.0f;
  std::vector<float> y_store((c.tokens - 1) * y_stride + c.rows + c.y_offset, kSentinel);
  float* y = y_store.data() + c.y_offset;
  MatMul(w.view, in.a, y, y_stride, c.row_begin, c.row_end);

  std::vector<float> ref(c.tokens * c.rows, 0.0f);
  MatMulReference(w.view, in.a, ref.data(), c.rows, c.row_begin, c.row_end);

  // Quantized cases compare against the packed activations they ran on (packing them here when
  // MatMul packed internally).
  std::vector<uint8_t> own_pack;
  const uint8_t* packed = static_cast<const uint8_t*>(in.a.packed);
  if (DTypeIsQuantized(c.dtype) && packed == nullptr) {
    Activations tmp = in.a;
    own_pack.resize(PackedActivationBytes(c.dtype, c.cols, c.tokens));
    PackActivations(c.dtype, c.cols, &tmp, own_pack.data());
    packed = own_pack.data();
  }
  const size_t packed_stride = kernels_internal::QuantLayoutFor(c.cols).stride;
  if (interleaved_bytes > 0 && c.row_begin % 16 == 0) {
    // The interleaved kernels compute exactly the per-block fold of MatMulInterleavedReference.
    Activations pa = in.a;
    pa.packed = packed;
    pa.packed_stride = packed_stride;
    std::vector<float> exact(c.tokens * c.rows, 0.0f);
    MatMulInterleavedReference(w.view, pa, exact.data(), c.rows, c.row_begin, c.row_end);
    for (size_t r = c.row_begin; r < c.row_end; ++r) {
      for (size_t t = 0; t < c.tokens; ++t) {
        ASSERT_EQ(y[t * y_stride + r], exact[t * c.rows + r]) << "vs interleaved reference r=" << r << " t=" << t;
      }
    }
  }

  std::vector<float> row(c.cols);
  double rel_sq = 0;
  size_t count = 0;
  for (size_t r = 0; r < c.rows; ++r) {
    const bool inside = r >= c.row_begin && r < c.row_end;
    if (inside) DequantizeRow(w.view, r, row.data());
    for (size_t t = 0; t < c.tokens; ++t) {
      const float got = y[t * y_stride + r];
      if (!inside) {
        ASSERT_EQ(got, kSentinel) << "wrote outside the slice at r=" << r << " t=" << t;
        continue;
      }
      const float* x = in.a.data + t * in.a.stride;
      double s = 0, quant_bound = 0;
      for (size_t k = 0; k < c.cols; ++k) s += std::fabs(static_cast<double>(row[k]) * x[k]);
      const double float_bound = (c.cols + 8) * kU * s + 1e-30;
      const double want = ref[t * c.rows + r];
      if (!DTypeIsQuantized(c.dtype)) {
        ASSERT_LE(std::fabs(got - want), float_bound) << "r=" << r << " t=" << t << " want=" << want;
        rel_sq += (got - want) * (got - want) / (s * s + 1e-300);
        ++count;
        continue;
      }
      double emu_abs = 0;
      const double emu = QuantEmulation(w.view, packed + t * packed_stride, r, &emu_abs);
      const size_t nb = c.cols / 32;
      ASSERT_LE(std::fabs(got - emu), 2 * (nb + 8) * kU * emu_abs + 1e-30)
          << "vs integer emulation r=" << r << " t=" << t << " emu=" << emu;
      for (size_t b = 0; b < nb; ++b) {
        double amax = 0, wabs = 0;
        for (size_t k = b * 32; k < b * 32 + 32; ++k) {
          amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
          wabs += std::fabs(row[k]);
        }
        quant_bound += amax / 254.0 * wabs * (1 + 1.0 / 1024);
      }
      ASSERT_LE(std::fabs(got - want), quant_bound + float_bound) << "vs float reference r=" << r << " t=" << t;
    }
  }
  if (count > 0) EXPECT_LT(std::sqrt(rel_sq / count), 1e-6);
}

const DType kAllTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};

TEST_P(TargetTest, ShapesAllTypes) {
  std::mt19937 rng(1234);
  const size_t float_cols[] = {32, 33, 47, 64, 100, 255, 640, 1000, 2048};
  const size_t quant_cols[] = {32, 64, 96, 160, 640, 1024, 2048};
  const std::pair<size_t, size_t> rows_tokens[] = {{1, 1}, {3, 2},  {4, 4},  {5, 3},  {8, 1},   {17, 5},
                                                   {33, 9}, {67, 7}, {16, 8}, {19, 64}, {9, 67}, {2, 6}};
  for (DType dtype : kAllTypes) {
    const bool quant = DTypeIsQuantized(dtype);
    for (size_t cols : quant ? std::vector<size_t>(std::begin(quant_cols), std::end(quant_cols))
                             : std::vector<size_t>(std::begin(float_cols), std::end(float_cols))) {
      for (auto [rows, tokens] : rows_tokens) {
        if (cols >= 1024 && rows * tokens > 200) continue;  // keep the reference cheap
        MatmulCase c{dtype, rows, cols, tokens, 0, rows};
        RunCase(c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(TargetTest, SlicesMisalignmentStrides) {
  std::mt19937 rng(99);
  for (DType dtype : kAllTypes) {
    const size_t cols = DTypeIsQuantized(dtype) ? 192 : 77;
    const std::pair<size_t, size_t> slices[] = {{5, 43}, {13, 14}, {0, 67}, {16, 32}, {66, 67}, {3, 10}};
    size_t i = 0;
    for (auto [rb, re] : slices) {
      for (size_t tokens : {1, 4, 9}) {
        ++i;
        MatmulCase c{dtype, 67, cols, tokens, rb, re};
        c.w_offset = i % 4;  // bytes
        c.x_offset = (i + 1) % 4;  // floats
        c.x_extra = i % 3 == 0 ? 0 : 5 + i;
        c.y_offset = (i + 2) % 4;
        c.y_extra = i % 2 == 0 ? 0 : 3;
        c.pack = i % 5 != 0;  // sometimes leave packing to MatMul
        c.pack_as_other_type = DTypeIsQuantized(dtype) && i % 2 == 1;
        c.zero_stride = tokens == 1 && i % 2 == 0;
        RunCase(c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(TargetTest, PackActivationsQuantizes) {
  std::mt19937 rng(7);
  const size_t cols = 96, tokens = 3;
  Inputs in = MakeInputs(tokens, cols, cols + 3, 1, rng);
  in.storage[1 + 32] = 0.0f;  // a block of zeros must give d = 0, q = 0
  for (size_t k = 32; k < 64; ++k) in.storage[1 + k] = 0.0f;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    std::vector<uint8_t> scratch(PackedActivationBytes(dtype, cols, tokens));
    Activations a = in.a;
    PackActivations(dtype, cols, &a, scratch.data());
    const kernels_internal::QuantLayout layout = kernels_internal::QuantLayoutFor(cols);
    ASSERT_EQ(a.packed_stride, layout.stride);
    for (size_t t = 0; t < tokens; ++t) {
      const uint8_t* rec = scratch.data() + t * layout.stride;
      for (size_t b = 0; b < layout.blocks; ++b) {
        const float* x = a.data + t * a.stride + b * 32;
        int32_t block_sum = 0, starts[2];
        for (size_t i = 0; i < 32; ++i) block_sum += static_cast<int8_t>(rec[b * 32 + i]);
        std::memcpy(starts, rec + layout.bsum_offset + b * 8, 8);
        ASSERT_EQ(starts[0], -128 * block_sum);
        ASSERT_EQ(starts[1], -8 * block_sum);
        float amax = 0;
        for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
        for (size_t j = 0; j < 8; ++j) {
          float d;
          int32_t corr;
          std::memcpy(&d, rec + layout.d8_offset + (b * 8 + j) * 4, 4);
          std::memcpy(&corr, rec + layout.corr_offset + (b * 8 + j) * 4, 4);
          ASSERT_EQ(d, amax / 127.0f);
          int32_t group = 0;
          for (size_t i = 4 * j; i < 4 * j + 4; ++i) {
            const int q = static_cast<int8_t>(rec[b * 32 + i]);
            const float exact = amax > 0 ? x[i] * (127.0f / amax) : 0.0f;
            ASSERT_LE(std::fabs(q - exact), 0.5f + 1e-5f) << "t=" << t << " k=" << b * 32 + i;
            ASSERT_LE(std::abs(q), 127);
            group += q;
          }
          ASSERT_EQ(corr, -128 * group);
        }
      }
    }
  }
}

// The accuracy of the quantized paths against the float reference (dequantized weights x float
// activations) on Gaussian activations, with and without 30x outliers in 1/64 of the channels.
// Prints relative RMS and max errors (relative to the RMS of the reference outputs); the bounds
// checked here are loose ceilings around the measured values quoted in matmul_quant.cpp.
TEST_P(TargetTest, QuantizedAccuracyVsFloat) {
  std::mt19937 rng(2024);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    for (bool outliers : {false, true}) {
      const size_t rows = 256, cols = 640, tokens = 8;
      const Weights w = MakeWeights(dtype, rows, cols, 0, rng);
      Inputs in = MakeInputs(tokens, cols, cols, 0, rng);
      if (!outliers) {
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float& v : in.storage) v = normal(rng);
      }
      std::vector<uint8_t> scratch(PackedActivationBytes(dtype, cols, tokens));
      PackActivations(dtype, cols, &in.a, scratch.data());
      std::vector<float> y(rows * tokens), ref(rows * tokens);
      MatMul(w.view, in.a, y.data(), rows, 0, rows);
      MatMulReference(w.view, in.a, ref.data(), rows, 0, rows);
      double err_sq = 0, ref_sq = 0, err_max = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        err_sq += (y[i] - ref[i]) * static_cast<double>(y[i] - ref[i]);
        ref_sq += ref[i] * static_cast<double>(ref[i]);
        err_max = std::max(err_max, std::fabs(static_cast<double>(y[i]) - ref[i]));
      }
      const double rms = std::sqrt(ref_sq / y.size());
      const double rel_rms = std::sqrt(err_sq / y.size()) / rms, rel_max = err_max / rms;
      std::printf("[ accuracy ] %s %s outliers: relative RMS error %.2e, max %.2e (target %s)\n", DTypeName(dtype),
                  outliers ? "with" : "without", rel_rms, rel_max, KernelTargetName());
      EXPECT_LT(rel_rms, outliers ? 3e-2 : 1e-2) << DTypeName(dtype);
    }
  }
}

// Row-interleaved weights: bit-identical to the scalar fold (MatMulInterleavedReference) on targets
// that read them, ignored by the others; partial panels, slices of whole panels, token tails,
// misaligned activations and outputs. Prints whether this target used them.
TEST_P(TargetTest, InterleavedWeights) {
  std::mt19937 rng(4242);
  TensorView probe{DType::kQ8_0, 16, 64, nullptr};
  std::printf("%s: interleaved kernels %s\n", KernelTargetName(), InterleavedWeightBytes(probe) > 0 ? "used" : "not used");
  // Each matrix's rows and two slices [begin, end) it alternates between: whole and empty, a
  // partial last panel, slices starting on a panel.
  struct RowsAndSlices {
    size_t rows;
    std::pair<size_t, size_t> slices[2];
  };
  const RowsAndSlices rows_slices[] = {
      {16, {{16, 16}, {0, 16}}}, {17, {{0, 17}, {16, 17}}}, {67, {{32, 67}, {48, 67}}}, {40, {{16, 40}, {32, 40}}}};
  size_t i = 0;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    for (size_t cols : {32, 64, 96, 640, 2048}) {
      for (const auto& rs : rows_slices) {
        const size_t rows = rs.rows;
        // smmla (NEON_I8MM) takes token pairs 4 at a time: tails of 1-3 pairs and an odd token.
        for (size_t tokens : {1, 2, 3, 6, 8, 9, 14, 17}) {
          if (cols >= 640 && rows * tokens > 300) continue;  // keep the reference cheap
          const auto slice = rs.slices[i % 2];
          ++i;
          MatmulCase c{dtype, rows, cols, tokens, slice.first, slice.second};
          c.interleave = true;
          c.x_offset = i % 3;
          c.x_extra = i % 2 == 0 ? 0 : 7;
          c.y_offset = i % 4;
          c.y_extra = i % 3 == 0 ? 0 : 5;
          c.pack = i % 5 != 0;
          c.pack_as_other_type = i % 2 == 1;
          RunCase(c, rng);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// The NEON fill of the Arm panels (whole panels a block at a time) writes the bytes the portable
// row-by-row definition does: partial last panels, odd block counts, misaligned stored rows.
TEST(InterleavedWeights, FillEqualsThePortableDefinition) {
  std::mt19937 rng(9);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    for (size_t rows : {1, 3, 4, 5, 8, 9, 12, 17, 33}) {
      for (size_t cols : {32, 96, 640}) {
        Weights w = MakeWeights(dtype, rows, cols, rows % 3, rng);
        const size_t bytes = InterleavedWeightBytes(w.view);
        if (bytes == 0) GTEST_SKIP() << KernelTargetName() << " has no interleaved kernels";
        std::vector<uint8_t> fast(bytes, 0xA5), portable(bytes, 0x5A);
        InterleaveWeights(w.view, fast.data());
        InterleaveWeightsPortable(w.view, portable.data());
        ASSERT_EQ(fast, portable) << DTypeName(dtype) << " " << rows << "x" << cols;
      }
    }
  }
}

// Token lookups read rows back from the interleaved copy: the same floats as the stored rows.
TEST(InterleavedWeights, LookupRowEqualsDequantizeRow) {
  std::mt19937 rng(8);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    Weights w = MakeWeights(dtype, 37, 96, 0, rng);
    const size_t bytes = InterleavedWeightBytes(w.view);
    if (bytes == 0) GTEST_SKIP() << KernelTargetName() << " has no interleaved kernels";
    std::vector<uint8_t> store(bytes);
    InterleaveWeights(w.view, store.data());
    KernelMatrix iv = w.view;
    iv.repacked = store.data();
    std::vector<float> want(96), got(96);
    for (size_t r = 0; r < 37; ++r) {
      DequantizeRow(w.view, r, want.data());
      LookupRow(iv, r, got.data());
      ASSERT_EQ(got, want) << DTypeName(dtype) << " row " << r;
      // A slice starting at a panel keeps the copy; elsewhere it falls back to the stored rows.
      const KernelMatrix slice = RowSlice(iv, r / 16 * 16, 37);
      ASSERT_EQ(slice.repacked != nullptr, true);
      LookupRow(slice, r % 16, got.data());
      ASSERT_EQ(got, want);
      EXPECT_EQ(RowSlice(iv, 1, 37).repacked, nullptr);
    }
  }
}

// What lets jump-forward and the catalog cache be exact: every output depends only on its own
// token, so a batch equals its tokens one at a time, bit for bit (interleaved or not).
TEST_P(TargetTest, BatchEqualsOneTokenAtATime) {
  std::mt19937 rng(77);
  for (DType dtype : kAllTypes) {
    for (bool interleave : {false, true}) {
      const size_t rows = 48, cols = DTypeIsQuantized(dtype) ? 640 : 100, tokens = 19;
      Weights w = MakeWeights(dtype, rows, cols, 0, rng);
      std::vector<uint8_t> store;
      if (interleave) {
        const size_t bytes = InterleavedWeightBytes(w.view);
        if (bytes == 0) continue;
        store.resize(bytes + 64);
        void* p = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
        InterleaveWeights(w.view, p);
        w.view.repacked = p;
      }
      Inputs in = MakeInputs(tokens, cols, cols, 0, rng);
      std::vector<uint8_t> scratch(PackedActivationBytes(dtype, cols, tokens));
      PackActivations(dtype, cols, &in.a, scratch.data());
      std::vector<float> batch(tokens * rows), single(tokens * rows);
      MatMul(w.view, in.a, batch.data(), rows, 0, rows);
      for (size_t t = 0; t < tokens; ++t) {
        Activations one;
        one.data = in.a.data + t * cols;
        one.stride = cols;
        one.num_tokens = 1;
        std::vector<uint8_t> s1(PackedActivationBytes(dtype, cols, 1));
        PackActivations(dtype, cols, &one, s1.data());
        MatMul(w.view, one, single.data() + t * rows, rows, 0, rows);
      }
      for (size_t k = 0; k < batch.size(); ++k) {
        ASSERT_EQ(batch[k], single[k]) << DTypeName(dtype) << (interleave ? " interleaved" : "") << " row " << k % rows
                                       << " token " << k / rows;
      }
    }
  }
}

// A restricted head computes chosen rows only: MatMulRows gives, in any order and repeated or not,
// the bits of those rows of the whole matrix when it is repacked (whole panels), else of one-row
// products.
TEST_P(TargetTest, MatMulRowsEqualsWholeMatrix) {
  std::mt19937 rng(91);
  for (DType dtype : kAllTypes) {
    const size_t rows = 70, cols = DTypeIsQuantized(dtype) ? 96 : 40;
    Weights w = MakeWeights(dtype, rows, cols, 0, rng);
    KernelMatrix* matrices[] = {&w.view};
    const PreparedWeights prepared = PrepareWeights(matrices);
    Inputs in = MakeInputs(1, cols, cols, 0, rng);
    std::vector<uint8_t> scratch(PackedActivationBytes(dtype, cols, 1));
    PackActivations(dtype, cols, &in.a, scratch.data());
    std::vector<float> whole(rows);
    MatMul(w.view, in.a, whole.data(), rows, 0, rows);
    const std::vector<int32_t> ids = {69, 3, 4, 17, 16, 3, 0, 64, 33};
    std::vector<float> got(ids.size());
    MatMulRows(w.view, in.a, ids, got.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t row = static_cast<size_t>(ids[i]);
      float one = whole[row];
      if (w.view.repacked == nullptr) MatMul(RowSlice(w.view, row, row + 1), in.a, &one, 0, 0, 1);
      ASSERT_EQ(got[i], one) << DTypeName(dtype) << " row " << row << (w.view.repacked ? " repacked" : "");
    }
  }
}

// The extremes of a q4_0 nibble (-8, 7) against the extremes of a quantized activation (+-127), in
// every row of a panel (aarch64's paired panels put two rows in a byte: the high row's -8 must
// shift back to -8, the low row's sum must come back whole from under 16 times the high one's), for
// one token and batches: the same bits as the reference fold.
TEST_P(TargetTest, Q4ExtremeNibblesAreExact) {
  const size_t cols = 64;
  std::mt19937 rng(1);
  for (size_t rows : {8, 12, 16, 24}) {
    Weights w = MakeWeights(DType::kQ4_0, rows, cols, 0, rng);  // values overwritten below
    uint8_t* data = w.storage.data();  // offset 0: the view's bytes
    for (size_t r = 0; r < rows; ++r) {
      for (size_t b = 0; b < cols / 32; ++b) {
        uint8_t* blk = data + (r * cols / 32 + b) * DTypeBlockBytes(DType::kQ4_0);
        const uint16_t h = F32ToF16((r + b) % 2 ? 0.75f : -1.5f);
        std::memcpy(blk, &h, 2);
        // Rows alternate the pattern so a byte pairs -8 with 7, 7 with -8, and equal nibbles.
        for (size_t i = 0; i < 16; ++i) blk[2 + i] = (r / 2 + i / 4) % 3 == 0 ? 0x00 : (r / 2 + i / 4) % 3 == 1 ? 0xFF : 0x0F;
      }
    }
    // The reference is the fold of the repacked kernels (the others sum in another order).
    const size_t bytes = InterleavedWeightBytes(w.view);
    if (bytes == 0) GTEST_SKIP() << KernelTargetName() << " has no repacked kernels";
    std::vector<uint8_t> store(bytes + 64);
    uint8_t* aligned = store.data() + (64 - reinterpret_cast<uintptr_t>(store.data()) % 64) % 64;
    InterleaveWeights(w.view, aligned);
    w.view.repacked = aligned;
    for (size_t tokens : {1, 2, 5, 9}) {
      std::vector<float> x(tokens * cols);
      for (size_t t = 0; t < tokens; ++t)
        for (size_t k = 0; k < cols; ++k) x[t * cols + k] = ((k / 4 + t) % 3 == 0 ? -50.0f : 50.0f);
      Activations a;
      a.data = x.data();
      a.stride = cols;
      a.num_tokens = tokens;
      std::vector<uint8_t> packed(PackedActivationBytes(DType::kQ4_0, cols, tokens));
      PackActivations(DType::kQ4_0, cols, &a, packed.data());
      std::vector<float> got(tokens * rows), want(tokens * rows);
      MatMul(w.view, a, got.data(), rows, 0, rows);
      MatMulInterleavedReference(w.view, a, want.data(), rows, 0, rows);
      ASSERT_EQ(got, want) << "rows " << rows << " tokens " << tokens;
    }
  }
}

// PrepareWeights repacks exactly the matrices the running target has a layout for, names it, and
// leaves the values as they were (LookupRow reads the copy back).
TEST_P(TargetTest, PrepareWeightsRepacksWhatTheTargetReads) {
  std::mt19937 rng(5);
  Weights q8 = MakeWeights(DType::kQ8_0, 40, 64, 0, rng), q4 = MakeWeights(DType::kQ4_0, 17, 96, 0, rng),
          bf = MakeWeights(DType::kBF16, 8, 32, 0, rng);
  // The stored pages of repacked matrices are released; these are heap copies of the values.
  const std::vector<uint8_t> q8_bytes = q8.storage, q4_bytes = q4.storage;
  KernelMatrix* matrices[] = {&q8.view, &q4.view, &bf.view};
  const PreparedWeights prepared = PrepareWeights(matrices);
  // bf16: NEON_BF16's panels only (kernels/matmul_bf16.cpp; bf16_dot_test.cpp reads them back).
  EXPECT_EQ(bf.view.repacked != nullptr, kernels_internal::ArmBf16Active());
  const size_t expected = InterleavedWeightBytes(q8.view);
  if (expected == 0) {
    EXPECT_EQ(prepared.repacked_bytes(), 0u);
    EXPECT_EQ(prepared.layout(), "");
    EXPECT_EQ(q8.view.repacked, nullptr);
    return;
  }
  EXPECT_EQ(prepared.layout(), "interleaved");
  EXPECT_GE(prepared.repacked_bytes(), expected + InterleavedWeightBytes(q4.view));
  ASSERT_NE(q8.view.repacked, nullptr);
  ASSERT_NE(q4.view.repacked, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q8.view.repacked) % 64, 0u);
  for (auto [m, bytes] : {std::pair{&q8.view, &q8_bytes}, std::pair{&q4.view, &q4_bytes}}) {
    KernelMatrix stored = *m;
    stored.data = bytes->data();
    stored.repacked = nullptr;
    std::vector<float> want(m->cols), got(m->cols);
    for (size_t r = 0; r < m->rows; ++r) {
      DequantizeRow(stored, r, want.data());
      LookupRow(*m, r, got.data());
      ASSERT_EQ(got, want) << DTypeName(m->dtype) << " row " << r;
    }
  }
}

// One filling thread (a one-thread run, exact qemu instruction counts) makes the same copies as two.
TEST(PrepareWeights, OneThreadEqualsTwo) {
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    std::mt19937 rng1(6), rng2(6);
    Weights a = MakeWeights(dtype, 4096 + 37, 64, 0, rng1), b = MakeWeights(dtype, 4096 + 37, 64, 0, rng2);
    KernelMatrix* ma[] = {&a.view};
    KernelMatrix* mb[] = {&b.view};
    const PreparedWeights one = PrepareWeights(ma, 1), two = PrepareWeights(mb, 2);
    ASSERT_EQ(one.repacked_bytes(), two.repacked_bytes());
    if (one.repacked_bytes() == 0) GTEST_SKIP() << KernelTargetName() << " repacks nothing";
    const size_t bytes = InterleavedWeightBytes(a.view);
    ASSERT_EQ(std::memcmp(a.view.repacked, b.view.repacked, bytes), 0) << DTypeName(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, TargetTest, ::testing::ValuesIn(KernelTargets()), TargetParamName);

TEST(KernelTargets, BestTargetIsChosenAndListed) {
  const std::vector<std::string> targets = KernelTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), KernelTargetName());
  EXPECT_FALSE(SetKernelTarget("NO_SUCH_TARGET"));
  for (const std::string& t : targets) {
    ASSERT_TRUE(SetKernelTarget(t));
    EXPECT_EQ(t, KernelTargetName());
  }
  ASSERT_TRUE(SetKernelTarget(""));
  EXPECT_EQ(targets.front(), KernelTargetName());
}

}  // namespace
}  // namespace fgemma
