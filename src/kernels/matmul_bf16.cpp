// bf16 weights on Arm's bf16 dot products (NEON_BF16): the panel copy (layout in matmul_internal.h),
// the activation packing, the dispatch to kernels/matmul_arm_bf16.cpp, and the scalar reference of
// the instructions' numerics (BfDotAdd), which every build compiles so that its own tests run
// anywhere; the instructions are checked against it under qemu-aarch64.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/matmul_arm_dot.h"
#include "kernels/matmul_internal.h"
#include "util/float_types.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace fgemma::kernels_internal {

namespace {

constexpr uint32_t kSign = 0x80000000u;
constexpr uint32_t kDefaultNaN = 0x7FC00000u;
constexpr uint32_t kInf = 0x7F800000u;

bool IsNaN(uint32_t u) { return (u & 0x7FFFFFFFu) > kInf; }
bool IsInf(uint32_t u) { return (u & 0x7FFFFFFFu) == kInf; }

// The product of two bf16 values as BFMulH computes it (a single-precision result): exact (8-bit
// significands give at most 16 bits), inputs that are subnormal taken as zero, results below 2^-126
// flushed to zero, results of 2^128 and more infinite.
uint32_t BfMul(uint16_t a, uint16_t b) {
  const uint32_t sign = (static_cast<uint32_t>(a ^ b) << 16) & kSign;
  const uint32_t ea = (a >> 7) & 0xFF, eb = (b >> 7) & 0xFF;
  const uint32_t ua = static_cast<uint32_t>(a) << 16, ub = static_cast<uint32_t>(b) << 16;
  if (IsNaN(ua) || IsNaN(ub)) return kDefaultNaN;
  const bool za = ea == 0, zb = eb == 0;  // zero or subnormal (flushed)
  if (IsInf(ua) || IsInf(ub)) return (za || zb) ? kDefaultNaN : (sign | kInf);
  if (za || zb) return sign;
  const uint32_t p = ((a & 0x7Fu) | 0x80u) * ((b & 0x7Fu) | 0x80u);  // [2^14, 2^16)
  const int lead = p >= (1u << 15) ? 15 : 14;
  // p * 2^(ea + eb - 268), its leading bit at 2^(lead + ea + eb - 268): biased exponent below.
  const int e = static_cast<int>(ea + eb) + lead - 141;
  if (e <= 0) return sign;
  if (e >= 255) return sign | kInf;
  return sign | static_cast<uint32_t>(e) << 23 | ((p << (23 - lead)) & 0x7FFFFFu);
}

// a + b rounded to single precision by round-to-odd, inputs that are subnormal taken as zero,
// results below 2^-126 flushed to zero (tininess before rounding), overflow to infinity, NaN the
// default NaN. Exact alignment in 64-bit integers: significands at bit 61, the shifted-out bits of the
// smaller one kept as a sticky bit (round-to-odd needs only whether anything was lost).
uint32_t RoundToOddAdd(uint32_t a, uint32_t b) {
  if (IsNaN(a) || IsNaN(b)) return kDefaultNaN;
  if (IsInf(a) || IsInf(b)) {
    if (IsInf(a) && IsInf(b) && (a ^ b) & kSign) return kDefaultNaN;
    return IsInf(a) ? a : b;
  }
  if ((a & 0x7F800000u) == 0) a &= kSign;  // flush subnormal inputs
  if ((b & 0x7F800000u) == 0) b &= kSign;
  if ((a & ~kSign) == 0 && (b & ~kSign) == 0) return a & b;  // -0 + -0 = -0, else +0
  if ((a & ~kSign) == 0) return b;
  if ((b & ~kSign) == 0) return a;
  if ((a & ~kSign) < (b & ~kSign)) std::swap(a, b);  // |a| >= |b|
  const int ea = static_cast<int>((a >> 23) & 0xFF), eb = static_cast<int>((b >> 23) & 0xFF);
  const uint64_t ma = static_cast<uint64_t>((a & 0x7FFFFFu) | 0x800000u) << 38;
  uint64_t mb = static_cast<uint64_t>((b & 0x7FFFFFu) | 0x800000u) << 38;
  const int d = ea - eb;
  if (d >= 63) {
    mb = 1;  // only the sticky bit
  } else if (d > 0) {
    const bool sticky = (mb & ((uint64_t{1} << d) - 1)) != 0;
    mb = (mb >> d) | (sticky ? 1 : 0);
  }
  const bool same_sign = ((a ^ b) & kSign) == 0;
  const uint64_t r = same_sign ? ma + mb : ma - mb;
  if (r == 0) return 0;  // x + (-x) = +0
  const int lead = 63 - __builtin_clzll(r);
  const int e = ea + lead - 61;
  if (e <= 0) return a & kSign;  // below 2^-126: flushed (the exact value's exponent)
  if (e >= 255) return (a & kSign) | kInf;
  uint32_t mant;
  bool inexact = false;
  if (lead >= 23) {
    mant = static_cast<uint32_t>(r >> (lead - 23));
    inexact = (r & ((uint64_t{1} << (lead - 23)) - 1)) != 0;
  } else {
    mant = static_cast<uint32_t>(r << (23 - lead));
  }
  return (a & kSign) | static_cast<uint32_t>(e) << 23 | (mant & 0x7FFFFFu) | (inexact ? 1u : 0u);
}

}  // namespace

float BfDotAdd(float sum, uint16_t w0, uint16_t w1, uint16_t x0, uint16_t x1) {
  const uint32_t pair = RoundToOddAdd(BfMul(w0, x0), BfMul(w1, x1));
  return FloatFromBits(RoundToOddAdd(FloatBits(sum), pair));
}

void PackBf16(size_t cols, const float* x, size_t x_stride, size_t num_tokens, uint8_t* out) {
  const size_t record = Bf16RecordBytes(cols);
  for (size_t t = 0; t < num_tokens; ++t) {
    uint8_t* rec = out + t * record;
    std::memset(rec, 0, record);
    for (size_t k = 0; k < cols; ++k) {
      const uint16_t h = F32ToBf16(x[t * x_stride + k]);
      std::memcpy(rec + 2 * k, &h, 2);
    }
  }
}

size_t Bf16PanelWeightBytes(const TensorView& w) {
  if (w.dtype != DType::kBF16 || !ArmBf16Active()) return 0;
  return (w.rows + kBf16PanelRows - 1) / kBf16PanelRows * Bf16PanelBytes(w.cols);
}

void FillBf16Panels(const TensorView& w, void* out) {
  const size_t panel_bytes = Bf16PanelBytes(w.cols), panels = (w.rows + kBf16PanelRows - 1) / kBf16PanelRows;
  uint8_t* dst = static_cast<uint8_t*>(out);
  // Row r's pairs from pair g0 on (a tail of fewer than 2 values: one value, then +0).
  auto copy_row = [&](size_t r, size_t g0) {
    uint8_t* q = dst + r / kBf16PanelRows * panel_bytes + r % kBf16PanelRows * 4;
    const uint8_t* src = w.row(r);
    size_t g = g0;
    for (; 2 * g + 1 < w.cols; ++g) std::memcpy(q + 16 * g, src + 4 * g, 4);
    if (w.cols % 2 == 1) std::memcpy(q + 16 * g, src + 4 * g, 2);
  };
  size_t first = 0;  // rows of the whole panels the vector loop fills
#if defined(__ARM_NEON)
  // A whole panel 8 values of each row at a time: the 4 rows' 4 pairs side by side by one st4 (a
  // pair at a time, with the zeroing pass before, was 4.5 guest instructions a value: 1.2G for the
  // 270m at load).
  const size_t chunks = w.cols / 8;
  for (; first + kBf16PanelRows <= w.rows; first += kBf16PanelRows) {
    uint8_t* panel = dst + first / kBf16PanelRows * panel_bytes;
    const uint8_t* rows[kBf16PanelRows] = {w.row(first), w.row(first + 1), w.row(first + 2), w.row(first + 3)};
    for (size_t c = 0; c < chunks; ++c) {
      uint32x4x4_t v;
      for (size_t i = 0; i < kBf16PanelRows; ++i) v.val[i] = vreinterpretq_u32_u8(vld1q_u8(rows[i] + 16 * c));
      vst4q_u32(reinterpret_cast<uint32_t*>(panel + 64 * c), v);
    }
    std::memset(panel + 64 * chunks, 0, panel_bytes - 64 * chunks);  // padded values: +0
    for (size_t i = 0; i < kBf16PanelRows; ++i) copy_row(first + i, 4 * chunks);
  }
#endif
  // The last partial panel (every panel without NEON): zeroed (padded rows and values: +0), then
  // filled a pair at a time.
  std::memset(dst + first / kBf16PanelRows * panel_bytes, 0, (panels - first / kBf16PanelRows) * panel_bytes);
  for (size_t r = first; r < w.rows; ++r) copy_row(r, 0);
}

void LookupBf16Row(const KernelMatrix& w, size_t r, float* out) {
  if (w.repacked == nullptr) {
    DequantizeRow(w, r, out);
    return;
  }
  const uint8_t* q = static_cast<const uint8_t*>(w.repacked) + r / kBf16PanelRows * Bf16PanelBytes(w.cols) +
                     r % kBf16PanelRows * 4;
  for (size_t k = 0; k < w.cols; ++k) {
    uint16_t h;
    std::memcpy(&h, q + k / 2 * 16 + k % 2 * 2, 2);
    out[k] = Bf16ToF32(h);
  }
}

void MatMulBf16DotReference(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                            size_t row_end) {
  const size_t pairs = Bf16PaddedCols(w.cols) / 2;
  for (size_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    for (size_t t = 0; t < a.num_tokens; ++t) {
      const uint8_t* rec = static_cast<const uint8_t*>(a.packed) + t * a.packed_stride;
      float acc = 0.0f;
      for (size_t g = 0; g < pairs; ++g) {
        uint16_t wv[2] = {0, 0}, xv[2];
        for (size_t i = 0; i < 2; ++i) {
          if (2 * g + i < w.cols) std::memcpy(&wv[i], row + 2 * (2 * g + i), 2);
        }
        std::memcpy(xv, rec + 4 * g, 4);
        acc = BfDotAdd(acc, wv[0], wv[1], xv[0], xv[1]);
      }
      y[t * y_stride + r] = acc;
    }
  }
}

#if defined(FGEMMA_ARM_BF16)
void MatMulArmBf16(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                   size_t row_end) {
  ArmBf16Job job;
  job.panel_bytes = Bf16PanelBytes(w.cols);
  job.panels = static_cast<const uint8_t*>(w.repacked) + row_begin / kBf16PanelRows * job.panel_bytes;
  job.pairs = Bf16PaddedCols(w.cols) / 2;
  job.packed = static_cast<const uint8_t*>(a.packed);
  job.packed_stride = a.packed_stride;
  job.tokens = a.num_tokens;
  job.y = y + row_begin;
  job.y_stride = y_stride;
  job.skip = row_begin % kBf16PanelRows;
  job.rows = row_end - row_begin;
  ArmBf16MatMul(job);
}
#else
void MatMulArmBf16(const KernelMatrix&, const Activations&, float*, size_t, size_t, size_t) {}
#endif

}  // namespace fgemma::kernels_internal
