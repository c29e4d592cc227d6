// The expanded rows of q4_1, q5_0, q5_1, q4_K, q5_K and q6_K weights (layout in
// kernels/matmul_internal.h), decoded from each format's definition (util/weight_types.h) into
// integer levels and float32 scales and minimums, exactly: scale * q + min is the stored value.
#include <cstring>

#include "kernels/matmul_internal.h"
#include "util/float_types.h"

namespace fgemma::kernels_internal {

namespace {

float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

// Block b (32 values) of `row` as levels q[32], the scales of its two halves and its minimum.
void ExpandBlock(DType type, const uint8_t* row, size_t b, int8_t* q, float* scale, float* min) {
  auto level = [q](size_t k, int v) { q[k] = static_cast<int8_t>(v); };
  *min = 0.0f;
  switch (type) {
    case DType::kQ4_1: {
      const uint8_t* blk = row + b * sizeof(BlockQ4_1);
      scale[0] = scale[1] = LoadF16(blk + offsetof(BlockQ4_1, d));
      *min = LoadF16(blk + offsetof(BlockQ4_1, m));
      for (size_t k = 0; k < 16; ++k) {
        level(k, blk[offsetof(BlockQ4_1, q) + k] & 15);
        level(k + 16, blk[offsetof(BlockQ4_1, q) + k] >> 4);
      }
      return;
    }
    case DType::kQ5_0:
    case DType::kQ5_1: {
      const bool one = type == DType::kQ5_1;
      const uint8_t* blk = row + b * (one ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0));
      scale[0] = scale[1] = LoadF16(blk);
      if (one) *min = LoadF16(blk + offsetof(BlockQ5_1, m));
      const uint8_t* qh = blk + (one ? offsetof(BlockQ5_1, qh) : offsetof(BlockQ5_0, qh));
      const uint8_t* qs = blk + (one ? offsetof(BlockQ5_1, q) : offsetof(BlockQ5_0, q));
      for (size_t k = 0; k < 32; ++k) level(k, Q5Value(qh, qs, k) - (one ? 0 : 16));
      return;
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = type == DType::kQ5_K;
      const uint8_t* blk = row + b / 8 * (five ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
      const size_t j = b % 8;
      const ScaleMin sm = KQuantScaleMin(blk + offsetof(BlockQ4_K, scales), j);  // same offset in Q5_K
      scale[0] = scale[1] = LoadF16(blk + offsetof(BlockQ4_K, d)) * static_cast<float>(sm.scale);
      *min = -(LoadF16(blk + offsetof(BlockQ4_K, dmin)) * static_cast<float>(sm.min));
      for (size_t k = 0; k < 32; ++k)
        level(k, five ? Q5KValue(blk, 32 * j + k) : KQuantNibble(blk + offsetof(BlockQ4_K, q), 32 * j + k));
      return;
    }
    case DType::kQ6_K: {
      const uint8_t* blk = row + b / 8 * sizeof(BlockQ6_K);
      const size_t e0 = 32 * (b % 8);
      const float d = LoadF16(blk + offsetof(BlockQ6_K, d));
      const auto* sc = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales));
      scale[0] = d * static_cast<float>(sc[e0 / 16]);
      scale[1] = d * static_cast<float>(sc[e0 / 16 + 1]);
      for (size_t k = 0; k < 32; ++k) level(k, Q6KValue(blk, e0 + k) - 32);
      return;
    }
    default: return;  // not an expanded type (callers check UsesExpandedRows)
  }
}

}  // namespace

void ExpandRows(const TensorView& w, size_t r0, size_t r1, uint8_t* out) {
  const size_t cols = w.cols, nb = cols / kQuantBlockValues, row_bytes = ExpandedRowBytes(cols);
  for (size_t r = r0; r < r1; ++r, out += row_bytes) {
    auto* q = reinterpret_cast<int8_t*>(out);
    uint8_t* scales = out + cols;
    uint8_t* mins = scales + cols / 16 * 4;
    for (size_t b = 0; b < nb; ++b) {
      float scale[2], min;
      ExpandBlock(w.dtype, w.row(r), b, q + 32 * b, scale, &min);
      std::memcpy(scales + 8 * b, scale, 8);
      std::memcpy(mins + 4 * b, &min, 4);
    }
  }
}

}  // namespace fgemma::kernels_internal
