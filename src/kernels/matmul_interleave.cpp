// Row-interleaved copies of quantized weights (layout in matmul_internal.h), the scalar reference
// of the kernels that read them, and the row accessors that know the layout (RowSlice, LookupRow,
// MatMulRows). Copies are made once per matrix at load, so plain code is fast enough: the
// 270m's 100 MB of q8_0 projections take about 50 ms.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/matmul_arm_dot.h"
#include "kernels/matmul_internal.h"
#include "util/float_types.h"

namespace fgemma {
namespace kernels_internal {

namespace {
constexpr size_t kBlockValues = kQuantBlockValues;
constexpr size_t kValuesAt = kQuantBlockScaleBytes;  // offset of a block's values (after its f16 scale)
}  // namespace

size_t InterleavedPanelBytes(DType type, size_t cols) {
  return InterleavedScaleBytes(cols) + cols / kBlockValues * InterleavedBlockBytes(type);
}

PanelFormat ActivePanelFormat() {
  if (ArmDotActive()) {
#if defined(__aarch64__)
    // q4_0 paired (two rows' nibbles a byte): the kernels start each block's int32 sum of the low
    // rows from -8 * (the sum of the token's block).
    return {kArmPanelRows, 2 * kArmPanelRows, 4, 0u, 0u, true};
#else
    return {kArmPanelRows, kArmPanelRows, 4, 0u, 0x88888888u, false};
#endif
  }
  if (X86PanelRows() == kAvx2PanelRows) return Avx2PanelFormat();
  return {kInterleaveRows, kInterleaveRows, 2, 0x80808080u, 0u, false};
}

size_t InterleavedWeightBytes(const TensorView& w) {
  if (w.dtype == DType::kBF16) return Bf16PanelWeightBytes(w);  // NEON_BF16 only (matmul_bf16.cpp)
  if (ReadsExpandedRows(w.dtype)) return w.rows * ExpandedRowBytes(w.cols);
  if (!DTypeIsQuantized(w.dtype) || w.cols % kBlockValues != 0 || !InterleavedKernelAvailable()) return 0;
  const PanelFormat f = ActivePanelFormat();
  const size_t rows = f.rows(w.dtype);
  return (w.rows + rows - 1) / rows * f.panel_bytes(w.dtype, w.cols);
}

void InterleaveWeights(const TensorView& w, void* out) {
  if (w.dtype == DType::kBF16) {
    FillBf16Panels(w, out);
    return;
  }
  if (ReadsExpandedRows(w.dtype)) {
    ExpandRows(w, 0, w.rows, static_cast<uint8_t*>(out));
    return;
  }
  const PanelFormat f = ActivePanelFormat();
  // Whole panels a block at a time where NEON fills the layout (kernels/arm_panel_fill.cpp), the
  // last partial panel (and every other target's layout) by the portable loop.
  size_t done = ArmDotActive() ? FillArmPanels(w, f, static_cast<uint8_t*>(out)) : 0;
  const size_t panel_bytes = f.panel_bytes(w.dtype, w.cols);
  InterleaveRowsPortable(w, f, done, static_cast<uint8_t*>(out) + done / f.rows(w.dtype) * panel_bytes);
}

void InterleaveWeightsPortable(const TensorView& w, void* out) {
  InterleaveRowsPortable(w, ActivePanelFormat(), 0, static_cast<uint8_t*>(out));
}

namespace {
// The level panels (matmul_internal.h) of rows [first, w.rows) from their expanded rows.
void FillLevelPanels(const TensorView& w, const PanelFormat& f, size_t first, uint8_t* dst) {
  const size_t nb = w.cols / kBlockValues, rows = f.rows(w.dtype), group_bytes = f.block_bytes(w.dtype);
  const size_t panels = (w.rows - first + rows - 1) / rows;
  const bool six = w.dtype == DType::kQ6_K, fifth = HasFifthBit(w.dtype);
  std::memset(dst, 0, panels * f.panel_bytes(w.dtype, w.cols));  // padded rows: levels, scales, mins 0
  std::vector<uint8_t> expanded(ExpandedRowBytes(w.cols));
  const size_t scales_at = w.cols, mins_at = w.cols + w.cols / 4;
  for (size_t r = first; r < w.rows; ++r) {
    ExpandRows(w, r, r + 1, expanded.data());
    const size_t lane = (r - first) % rows;
    uint8_t* panel = dst + (r - first) / rows * f.panel_bytes(w.dtype, w.cols);
    for (size_t b = 0; b < nb; ++b) {
      // Levels 0..31 (the types with minimums have no offset) or 0..63 (q6_K: its signed values + 32).
      uint8_t level[kBlockValues];
      for (size_t k = 0; k < kBlockValues; ++k)
        level[k] = static_cast<uint8_t>(expanded[b * kBlockValues + k] + (six ? 32 : 0));
      uint8_t* block = panel + b * group_bytes;
      for (size_t g = 0; g < 4; ++g) {
        for (size_t i = 0; i < 4; ++i) {
          const uint8_t lo = level[4 * g + i], hi = level[16 + 4 * g + i];
          block[(g * rows + lane) * 4 + i] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
        }
      }
      size_t at = 16 * rows;
      if (fifth) {
        for (size_t i = 0; i < 4; ++i) {
          uint8_t bits = 0;
          for (size_t g = 0; g < 8; ++g) bits |= static_cast<uint8_t>((level[4 * g + i] >> 4 & 1) << g);
          block[at + lane * 4 + i] = bits;
        }
        at += 4 * rows;
      }
      if (six) {
        for (size_t plane = 0; plane < 2; ++plane) {
          for (size_t i = 0; i < 4; ++i) {
            uint8_t bits = 0;
            for (size_t j = 0; j < 4; ++j) bits |= static_cast<uint8_t>((level[4 * (4 * plane + j) + i] >> 4 & 3) << (2 * j));
            block[at + (plane * rows + lane) * 4 + i] = bits;
          }
        }
        at += 8 * rows;
        // Both scales of the block (a scale per 16 values); no minimum.
        std::memcpy(block + at + lane * 4, expanded.data() + scales_at + 8 * b, 4);
        std::memcpy(block + at + 4 * rows + lane * 4, expanded.data() + scales_at + 8 * b + 4, 4);
        continue;
      }
      std::memcpy(block + at + lane * 4, expanded.data() + scales_at + 8 * b, 4);  // the block's (first) scale
      std::memcpy(block + at + 4 * rows + lane * 4, expanded.data() + mins_at + 4 * b, 4);
    }
  }
}
}  // namespace

// Rows [first, w.rows) (first a multiple of the panel rows) into the panels from `dst` on.
void InterleaveRowsPortable(const TensorView& w, const PanelFormat& f, size_t first, uint8_t* dst) {
  if (first >= w.rows) return;
  const size_t nb = w.cols / kBlockValues, block_bytes = DTypeBlockBytes(w.dtype);
  const size_t panel_bytes = f.panel_bytes(w.dtype, w.cols);
  const size_t scale_bytes = f.scale_bytes(w.dtype, w.cols);
  const size_t group_bytes = f.block_bytes(w.dtype);
  const bool q8 = w.dtype == DType::kQ8_0;
  const size_t rows = f.rows(w.dtype);
  const size_t panels = (w.rows - first + rows - 1) / rows;
  if (LevelPanelRowBytes(w.dtype) > 0) {
    FillLevelPanels(w, f, first, dst);
    return;
  }
  // Padded rows: scale 0, weights 0 (paired q4_0: nibble 8 stored for w = 0 in a low nibble).
  std::memset(dst, 0, panels * panel_bytes);
  if (!q8 && f.q4_paired) {
    for (size_t p = 0; p < panels; ++p) std::memset(dst + p * panel_bytes + scale_bytes, 0x08, nb * group_bytes);
  }
  for (size_t r = first; r < w.rows; ++r) {
    uint8_t* panel = dst + (r - first) / rows * panel_bytes;
    const size_t lane = r % rows;
    const uint8_t* src = w.row(r);
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* blk = src + b * block_bytes;
      if (f.scale_size == 2) {
        std::memcpy(panel + (b * rows + lane) * 2, blk, 2);
      } else {
        uint16_t h;
        std::memcpy(&h, blk, 2);
        const float d = F16ToF32(h);  // exact
        std::memcpy(panel + (b * rows + lane) * 4, &d, 4);
      }
      if (!q8 && f.q4_paired) {
        // Element e = 4g + i of this row into byte i of group g (4 bytes at 16g), lane r % 4: the low
        // nibble as stored (rows 0-3), the high nibble flipped to w in two's complement (rows 4-7).
        // Elements 4g..4g+3 are the low (g < 4) or high (g >= 4) nibbles of stored bytes 4(g % 4)..:
        // four at a time in a uint32 (a byte loop cost ~10 guest instructions a value on aarch64).
        uint8_t* q = panel + scale_bytes + b * group_bytes + lane % 4 * 4;
        for (size_t g = 0; g < kBlockValues / 4; ++g) {
          uint32_t stored, to;
          std::memcpy(&stored, blk + kValuesAt + 4 * (g % 4), 4);
          stored = (g < 4 ? stored : stored >> 4) & 0x0F0F0F0Fu;
          std::memcpy(&to, q + 16 * g, 4);
          to = lane < 4 ? (to & 0xF0F0F0F0u) | stored : (to & 0x0F0F0F0Fu) | (stored ^ 0x08080808u) << 4;
          std::memcpy(q + 16 * g, &to, 4);
        }
        continue;
      }
      uint8_t* q = panel + scale_bytes + b * group_bytes + lane * 4;
      if (w.dtype == DType::kQ5_0) {
        // The nibbles as q4_0's (without the scale: the block's qh, then q), the fifth bits after them:
        // bit g of byte i of this row's 4 = bit 4g + i of qh.
        uint32_t qh;
        std::memcpy(&qh, blk + 2, 4);
        for (size_t g = 0; g < 4; ++g) std::memcpy(q + g * rows * 4, blk + 6 + 4 * g, 4);
        for (size_t i = 0; i < 4; ++i) {
          uint8_t bits = 0;
          for (size_t g = 0; g < 8; ++g) bits |= static_cast<uint8_t>((qh >> (4 * g + i) & 1) << g);
          q[4 * rows * 4 + i] = bits;
        }
        continue;
      }
      // q8_0: 8 groups of 4 signed bytes (VNNI: stored as w + 128, each sign bit flipped); q4_0: 4
      // groups of 4 bytes (each byte holds an element of group j and of group j + 4).
      const uint32_t flip = q8 ? f.q8_flip : f.q4_flip;
      for (size_t g = 0; g < (q8 ? 8u : 4u); ++g) {
        uint32_t four;
        std::memcpy(&four, blk + kValuesAt + 4 * g, 4);
        four ^= flip;
        std::memcpy(q + g * rows * 4, &four, 4);
      }
    }
  }
}

#if defined(FGEMMA_ARM_DOT)
void MatMulArmDot(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                  size_t row_end) {
  const PanelFormat f = ActivePanelFormat();
  const QuantLayout layout = QuantLayoutFor(w.cols);
  ArmDotJob job;
  job.panel_bytes = f.panel_bytes(w.dtype, w.cols);
  job.panels = static_cast<const uint8_t*>(w.repacked) + row_begin / f.rows(w.dtype) * job.panel_bytes;
  job.scale_bytes = f.scale_bytes(w.dtype, w.cols);
  job.blocks = layout.blocks;
  job.q4 = w.dtype == DType::kQ4_0;
  job.packed = static_cast<const uint8_t*>(a.packed);
  job.packed_stride = a.packed_stride;
  job.d8_offset = layout.d8_offset;
  job.bsum_offset = layout.bsum_offset;
  job.tokens = a.num_tokens;
  job.y = y + row_begin;
  job.y_stride = y_stride;
  job.rows = row_end - row_begin;
#if defined(FGEMMA_ARM_I8MM)
  // Token pairs take smmla, an odd last token sdot (the same bits either way).
  if (ArmI8mmActive() && job.tokens >= 2) {
    thread_local std::vector<uint8_t> pairs;
    pairs.resize(ArmI8mmPairBytes(job.blocks, job.tokens) + 16);
    uint8_t* aligned = pairs.data() + (16 - reinterpret_cast<uintptr_t>(pairs.data()) % 16) % 16;
    ArmDotJob even = job;
    even.tokens = job.tokens / 2 * 2;
    ArmI8mmMatMul(even, aligned);
    if (even.tokens == job.tokens) return;
    job.packed += even.tokens * job.packed_stride;
    job.y += even.tokens * y_stride;
    job.tokens -= even.tokens;
  }
#endif
  ArmDotMatMul(job);
}
#else
void MatMulArmDot(const KernelMatrix&, const Activations&, float*, size_t, size_t, size_t) {}
#endif

void MatMulInterleavedReference(const TensorView& w, const Activations& a, float* y, size_t y_stride,
                                size_t row_begin, size_t row_end) {
  const QuantLayout layout = QuantLayoutFor(w.cols);
  const size_t block_bytes = DTypeBlockBytes(w.dtype);
  for (size_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    for (size_t t = 0; t < a.num_tokens; ++t) {
      const uint8_t* rec = static_cast<const uint8_t*>(a.packed) + t * a.packed_stride;
      const int8_t* xq = reinterpret_cast<const int8_t*>(rec);
      float acc = 0.0f;
      for (size_t b = 0; b < layout.blocks; ++b) {
        const uint8_t* blk = row + b * block_bytes;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        float dx;
        std::memcpy(&dx, rec + layout.d8_offset + b * 32, 4);
        int32_t dot = 0;
        for (size_t k = 0; k < kBlockValues; ++k) {
          int wq;
          if (w.dtype == DType::kQ8_0) {
            wq = static_cast<int8_t>(blk[kValuesAt + k]);
          } else {
            const uint8_t byte = blk[kValuesAt + k % (kBlockValues / 2)];
            wq = (k < kBlockValues / 2 ? byte & 15 : byte >> 4) - 8;
          }
          dot += wq * xq[b * kBlockValues + k];
        }
        const float scale = F16ToF32(h) * dx;  // rounded to float, as the kernel's vector multiply
        acc = std::fma(static_cast<float>(dot), scale, acc);
      }
      y[t * y_stride + r] = acc;
    }
  }
}

}  // namespace kernels_internal

using kernels_internal::kBlockValues;

KernelMatrix RowSlice(const KernelMatrix& w, size_t r0, size_t r1) {
  KernelMatrix s = w;
  s.data = w.row(r0);
  s.rows = r1 - r0;
  s.repacked = nullptr;
  if (w.dtype == DType::kBF16) {  // NEON_BF16's 4-row panels
    if (w.repacked != nullptr && r0 % kernels_internal::kBf16PanelRows == 0) {
      s.repacked = static_cast<const uint8_t*>(w.repacked) +
                   r0 / kernels_internal::kBf16PanelRows * kernels_internal::Bf16PanelBytes(w.cols);
    }
    return s;
  }
  if (kernels_internal::ReadsExpandedRows(w.dtype)) {  // a row a "panel"
    if (w.repacked != nullptr)
      s.repacked = static_cast<const uint8_t*>(w.repacked) + r0 * kernels_internal::ExpandedRowBytes(w.cols);
    return s;
  }
  const kernels_internal::PanelFormat f = kernels_internal::ActivePanelFormat();
  if (w.repacked != nullptr && r0 % f.rows(w.dtype) == 0) {
    s.repacked = static_cast<const uint8_t*>(w.repacked) + r0 / f.rows(w.dtype) * f.panel_bytes(w.dtype, w.cols);
  }
  return s;
}

void LookupRow(const KernelMatrix& w, size_t r, float* out) {
  if (w.dtype == DType::kBF16) {
    kernels_internal::LookupBf16Row(w, r, out);
    return;
  }
  // The expanded types decode the stored row (the format's own decoder; a lookup touches one row's
  // pages of the file again, not the matrix).
  if (w.repacked == nullptr || kernels_internal::UsesExpandedRows(w.dtype)) {
    DequantizeRow(w, r, out);
    return;
  }
  const kernels_internal::PanelFormat f = kernels_internal::ActivePanelFormat();
  const size_t rows = f.rows(w.dtype);
  const size_t nb = w.cols / kBlockValues, lane = r % rows;
  const bool q8 = w.dtype == DType::kQ8_0;
  const uint8_t* panel = static_cast<const uint8_t*>(w.repacked) + r / rows * f.panel_bytes(w.dtype, w.cols);
  const size_t scale_bytes = f.scale_bytes(w.dtype, w.cols);
  const size_t group_bytes = f.block_bytes(w.dtype);
  const uint32_t flip = q8 ? f.q8_flip : f.q4_flip;
  for (size_t b = 0; b < nb; ++b) {
    float d;
    if (f.scale_size == 2) {
      uint16_t h;
      std::memcpy(&h, panel + (b * rows + lane) * 2, 2);
      d = F16ToF32(h);
    } else {
      std::memcpy(&d, panel + (b * rows + lane) * 4, 4);
    }
    float* o = out + b * kBlockValues;
    if (!q8 && f.q4_paired) {
      const uint8_t* q = panel + scale_bytes + b * group_bytes + lane % 4 * 4;
      for (size_t e = 0; e < kBlockValues; ++e) {
        const uint8_t byte = q[e / 4 * 16 + e % 4];
        const int w8 = lane < 4 ? (byte & 15) - 8 : static_cast<int8_t>(byte) >> 4;  // the high nibble is w itself
        o[e] = d * static_cast<float>(w8);
      }
      continue;
    }
    const uint8_t* q = panel + scale_bytes + b * group_bytes + lane * 4;
    for (size_t g = 0; g < (q8 ? 8u : 4u); ++g) {
      for (size_t i = 0; i < 4; ++i) {
        const uint8_t byte = q[g * rows * 4 + i] ^ static_cast<uint8_t>(flip);  // back to the stored byte
        if (q8) {
          o[4 * g + i] = d * static_cast<float>(static_cast<int8_t>(byte));
        } else {
          o[4 * g + i] = d * static_cast<float>((byte & 15) - 8);
          o[kBlockValues / 2 + 4 * g + i] = d * static_cast<float>((byte >> 4) - 8);
        }
      }
    }
  }
}

void MatMulRows(const KernelMatrix& w, const Activations& a, std::span<const int32_t> rows, float* y) {
  if (w.repacked == nullptr || kernels_internal::ReadsExpandedRows(w.dtype)) {  // rows computed one by one
    for (size_t i = 0; i < rows.size(); ++i) {
      const size_t row = static_cast<size_t>(rows[i]);
      MatMul(RowSlice(w, row, row + 1), a, y + i, 0, 0, 1);
    }
    return;
  }
  // Interleaved rows come 16 (or 8 or 4) to a panel: compute the row's whole panel (the same bits as
  // the full matrix gives that row), reusing it for neighbouring rows.
  const size_t panel_rows = w.dtype == DType::kBF16 ? kernels_internal::kBf16PanelRows
                                                    : kernels_internal::ActivePanelFormat().rows(w.dtype);
  float panel[kernels_internal::kInterleaveRows];
  size_t panel_row = SIZE_MAX;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t row = static_cast<size_t>(rows[i]);
    if (row / panel_rows * panel_rows != panel_row) {
      panel_row = row / panel_rows * panel_rows;
      const size_t end = std::min(w.rows, panel_row + panel_rows);
      MatMul(RowSlice(w, panel_row, end), a, panel, 0, 0, end - panel_row);
    }
    y[i] = panel[row - panel_row];
  }
}

}  // namespace fgemma
