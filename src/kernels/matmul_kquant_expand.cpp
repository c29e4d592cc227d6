// The expanded rows of q4_1, q5_0, q5_1, q4_K, q5_K and q6_K weights (layout in
// kernels/matmul_internal.h), decoded from each format's definition (util/weight_types.h) into
// integer levels and float32 scales and minimums, exactly: scale * q + min is the stored value.
#include <cstring>

#include "kernels/matmul_internal.h"
#include "util/float_types.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace fgemma::kernels_internal {

namespace {


// Each type's expansion of one row: levels q[cols], scales (2 a block of 32: each 16 values'),
// minimums (1 a block). Written per type with whole blocks' bit operations: this runs over every
// weight at load, and over each row per product in the stored layout.
struct RowOut {
  int8_t* q;
  uint8_t* scales;  // float[2 * blocks], not necessarily aligned
  uint8_t* mins;    // float[blocks]
  void Scale(size_t i, float v) const { std::memcpy(scales + 4 * i, &v, 4); }
  void Min(size_t i, float v) const { std::memcpy(mins + 4 * i, &v, 4); }
};

#if !defined(__ARM_NEON)  // the portable forms of the q5 and K expansions (NEON's below)
// For each qh byte, the 8 bytes its bits add to 8 nibbles, whole uint64 at a time: q5_1 keeps the
// level v = nibble + 16 * bit (byte = nibble | 0x10); q5_0 stores v - 16 as int8, which is the
// nibble itself where the bit is set and nibble - 16 = nibble | 0xF0 where it is clear.
struct FifthBitTables {
  uint64_t q5_1[256], q5_0[256];
  constexpr FifthBitTables() : q5_1(), q5_0() {
    for (int b = 0; b < 256; ++b) {
      for (int k = 0; k < 8; ++k) {
        const uint64_t set = (b >> k) & 1;
        q5_1[b] |= (set ? uint64_t{0x10} : 0) << (8 * k);
        q5_0[b] |= (set ? 0 : uint64_t{0xF0}) << (8 * k);
      }
    }
  }
};
constexpr FifthBitTables kFifthBits;

// Q5_K's fifth bits 8 bytes at a time (the byte loop costs 2.2 guest instructions a value on aarch64,
// this 1.6; q4_1's, q4_K's and q6_K's byte loops compile as well as their 64-bit forms or better).
constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0FULL, kLowBits = 0x0101010101010101ULL;
#endif

void ExpandQ4_1(const uint8_t* row, size_t nb, RowOut o) {
  for (size_t b = 0; b < nb; ++b, row += sizeof(BlockQ4_1)) {
    const float d = LoadF16(row + offsetof(BlockQ4_1, d));
    o.Scale(2 * b, d);
    o.Scale(2 * b + 1, d);
    o.Min(b, LoadF16(row + offsetof(BlockQ4_1, m)));
    int8_t v[32];
    for (size_t k = 0; k < 16; ++k) {
      const uint8_t byte = row[offsetof(BlockQ4_1, q) + k];
      v[k] = static_cast<int8_t>(byte & 15);
      v[k + 16] = static_cast<int8_t>(byte >> 4);
    }
    std::memcpy(o.q + 32 * b, v, 32);
  }
}

template <bool kMin>  // Q5_1 (with m, levels as stored) or Q5_0 (levels - 16)
void ExpandQ5(const uint8_t* row, size_t nb, RowOut o) {
  constexpr size_t kBytes = kMin ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
  constexpr size_t kQh = kMin ? offsetof(BlockQ5_1, qh) : offsetof(BlockQ5_0, qh);
  constexpr size_t kQs = kMin ? offsetof(BlockQ5_1, q) : offsetof(BlockQ5_0, q);
  for (size_t b = 0; b < nb; ++b, row += kBytes) {
    const float d = LoadF16(row);
    o.Scale(2 * b, d);
    o.Scale(2 * b + 1, d);
    o.Min(b, kMin ? LoadF16(row + offsetof(BlockQ5_1, m)) : 0.0f);
#if defined(__ARM_NEON)
    // NEON (half the guest instructions of the table form on AArch32): each qh byte spread over 8
    // lanes, tested against that lane's bit.
    const uint8x16_t qs = vld1q_u8(row + kQs);
    uint32_t qh_bits;  // at a 2-byte offset in q5_0's blocks: not aligned
    std::memcpy(&qh_bits, row + kQh, 4);
    const uint8x8_t qh = vreinterpret_u8_u32(vdup_n_u32(qh_bits));
    const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ULL));
    const uint8x16_t set_lo = vtstq_u8(vcombine_u8(vdup_lane_u8(qh, 0), vdup_lane_u8(qh, 1)), bit);
    const uint8x16_t set_hi = vtstq_u8(vcombine_u8(vdup_lane_u8(qh, 2), vdup_lane_u8(qh, 3)), bit);
    uint8x16_t lo = vandq_u8(qs, vdupq_n_u8(15)), hi = vshrq_n_u8(qs, 4);
    if constexpr (kMin) {  // v = nibble | 0x10 where the bit is set
      lo = vorrq_u8(lo, vandq_u8(set_lo, vdupq_n_u8(0x10)));
      hi = vorrq_u8(hi, vandq_u8(set_hi, vdupq_n_u8(0x10)));
    } else {  // v - 16 = nibble | 0xF0 where it is clear
      lo = vorrq_u8(lo, vbicq_u8(vdupq_n_u8(0xF0), set_lo));
      hi = vorrq_u8(hi, vbicq_u8(vdupq_n_u8(0xF0), set_hi));
    }
    vst1q_u8(reinterpret_cast<uint8_t*>(o.q + 32 * b), lo);
    vst1q_u8(reinterpret_cast<uint8_t*>(o.q + 32 * b + 16), hi);
#else
    // Elements 8i..8i+7 (low nibbles) and 16 + 8i.. (high nibbles) with their fifth bits from qh
    // bytes i and 2 + i (little-endian: bit e of the u32 for element e).
    const uint64_t* table = kMin ? kFifthBits.q5_1 : kFifthBits.q5_0;
    int8_t v[32];
    for (size_t i = 0; i < 2; ++i) {
      uint64_t nibbles;
      std::memcpy(&nibbles, row + kQs + 8 * i, 8);
      const uint64_t lo = (nibbles & 0x0F0F0F0F0F0F0F0FULL) | table[row[kQh + i]];
      const uint64_t hi = (nibbles >> 4 & 0x0F0F0F0F0F0F0F0FULL) | table[row[kQh + 2 + i]];
      std::memcpy(v + 8 * i, &lo, 8);
      std::memcpy(v + 16 + 8 * i, &hi, 8);
    }
    std::memcpy(o.q + 32 * b, v, 32);
#endif
  }
}

template <bool kFive>  // Q5_K or Q4_K
void ExpandQK(const uint8_t* row, size_t nb, RowOut o) {
  constexpr size_t kBytes = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr size_t kQs = kFive ? offsetof(BlockQ5_K, q) : offsetof(BlockQ4_K, q);
  for (size_t s = 0; s < nb / 8; ++s, row += kBytes) {
    const float d = LoadF16(row + offsetof(BlockQ4_K, d)), dmin = LoadF16(row + offsetof(BlockQ4_K, dmin));
    for (size_t j = 0; j < 8; ++j) {
      const ScaleMin sm = KQuantScaleMin(row + offsetof(BlockQ4_K, scales), j);  // same offset in Q5_K
      o.Scale(16 * s + 2 * j, d * static_cast<float>(sm.scale));
      o.Scale(16 * s + 2 * j + 1, d * static_cast<float>(sm.scale));
      o.Min(8 * s + j, -(dmin * static_cast<float>(sm.min)));
    }
#if defined(__ARM_NEON)
    // 16 bytes at a time; Q5_K's fifth bits tested in place (bit 2c / 2c + 1 of each qh byte).
    for (size_t c = 0; c < 4; ++c) {
      for (size_t l = 0; l < 32; l += 16) {
        const uint8x16_t bytes = vld1q_u8(row + kQs + 32 * c + l);
        uint8x16_t lo = vandq_u8(bytes, vdupq_n_u8(15)), hi = vshrq_n_u8(bytes, 4);
        if constexpr (kFive) {
          const uint8x16_t h = vld1q_u8(row + offsetof(BlockQ5_K, qh) + l), sixteen = vdupq_n_u8(0x10);
          lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(1u << (2 * c)))), sixteen));
          hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(2u << (2 * c)))), sixteen));
        }
        vst1q_u8(reinterpret_cast<uint8_t*>(o.q + 256 * s + 64 * c + l), lo);
        vst1q_u8(reinterpret_cast<uint8_t*>(o.q + 256 * s + 64 * c + 32 + l), hi);
      }
    }
#else
    // 8 bytes (elements l..l+7 of chunk c) a uint64: nibbles masked out whole; Q5_K's fifth bit of
    // each byte's element is bit 2c (low nibble) or 2c + 1 (high) of the same qh byte, moved to bit 4.
    int8_t v[256];
    for (size_t c = 0; c < 4; ++c) {  // 64 values: sub-blocks 2c (low nibbles) and 2c + 1 (high)
      for (size_t l = 0; l < 32; l += 8) {
        uint64_t bytes;
        std::memcpy(&bytes, row + kQs + 32 * c + l, 8);
        uint64_t lo = bytes & kLowNibbles, hi = bytes >> 4 & kLowNibbles;
        if constexpr (kFive) {
          uint64_t h;
          std::memcpy(&h, row + offsetof(BlockQ5_K, qh) + l, 8);
          lo |= (h >> (2 * c) & kLowBits) << 4;
          hi |= (h >> (2 * c + 1) & kLowBits) << 4;
        }
        std::memcpy(v + 64 * c + l, &lo, 8);
        std::memcpy(v + 64 * c + 32 + l, &hi, 8);
      }
    }
    std::memcpy(o.q + 256 * s, v, 256);
#endif
  }
}

void ExpandQ6_K(const uint8_t* row, size_t nb, RowOut o) {
  for (size_t s = 0; s < nb / 8; ++s, row += sizeof(BlockQ6_K)) {
    const float d = LoadF16(row + offsetof(BlockQ6_K, d));
    for (size_t j = 0; j < 16; ++j)
      o.Scale(16 * s + j, d * static_cast<float>(static_cast<int8_t>(row[offsetof(BlockQ6_K, scales) + j])));
    for (size_t j = 0; j < 8; ++j) o.Min(8 * s + j, 0.0f);
    int8_t v[256];
    for (size_t h = 0; h < 2; ++h) {  // element 128h + 32i + l, see util/weight_types.h
      for (size_t l = 0; l < 32; ++l) {
        const uint8_t a = row[offsetof(BlockQ6_K, ql) + 64 * h + l], b = row[offsetof(BlockQ6_K, ql) + 64 * h + 32 + l];
        const uint8_t top = row[offsetof(BlockQ6_K, qh) + 32 * h + l];
        v[128 * h + l] = static_cast<int8_t>(((a & 15) | (top & 3) << 4) - 32);
        v[128 * h + 32 + l] = static_cast<int8_t>(((b & 15) | (top >> 2 & 3) << 4) - 32);
        v[128 * h + 64 + l] = static_cast<int8_t>(((a >> 4) | (top >> 4 & 3) << 4) - 32);
        v[128 * h + 96 + l] = static_cast<int8_t>(((b >> 4) | (top >> 6 & 3) << 4) - 32);
      }
    }
    std::memcpy(o.q + 256 * s, v, 256);
  }
}

}  // namespace

void ExpandRows(const TensorView& w, size_t r0, size_t r1, uint8_t* out) {
  const size_t cols = w.cols, nb = cols / kQuantBlockValues, row_bytes = ExpandedRowBytes(cols);
  for (size_t r = r0; r < r1; ++r, out += row_bytes) {
    const RowOut o{reinterpret_cast<int8_t*>(out), out + cols, out + cols + 8 * nb};
    switch (w.dtype) {
      case DType::kQ4_1: ExpandQ4_1(w.row(r), nb, o); break;
      case DType::kQ5_0: ExpandQ5<false>(w.row(r), nb, o); break;
      case DType::kQ5_1: ExpandQ5<true>(w.row(r), nb, o); break;
      case DType::kQ4_K: ExpandQK<false>(w.row(r), nb, o); break;
      case DType::kQ5_K: ExpandQK<true>(w.row(r), nb, o); break;
      case DType::kQ6_K: ExpandQ6_K(w.row(r), nb, o); break;
      default: return;  // not an expanded type (callers check UsesExpandedRows)
    }
  }
}

}  // namespace fgemma::kernels_internal
