// The int8 levels of one block of 32 values, for the x86 K-quant kernel (kernels/matmul_kquant.cpp),
// read from the expanded row: 32 bytes in element order (byte e = element e's level, as ExpandRows
// writes it) and the block's two scales. (Until the AVX2 panels took every type, row sources that
// unpacked the stored GGUF blocks in registers lived here too.)
// Highway multiple-inclusion header: include after hwy/highway.h, inside no namespace.
#if defined(FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#undef FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#else
#define FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/simd_common-inl.h"
#include "util/weight_types.h"

HWY_BEFORE_NAMESPACE();
namespace fgemma {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// A row source, read in groups of kGroup blocks: Prepare(g) computes what group g's blocks share,
// Block<j>(group, g, w, sc) gives block kGroup * g + j's levels and its scale vector (lanes 0-3 the
// first 16 values' scale, 4-7 the second's).
struct NoGroup {};

HWY_INLINE __m256 HalfScales(float s0, float s1) { return _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0)); }

// The expanded row: 32 levels a block, then the header (2 scales a block, then 1 minimum a block).
struct ExpandedLevels {
  static constexpr size_t kGroup = 1;
  using Group = NoGroup;
  const uint8_t* q;
  const uint8_t* scales;
  const uint8_t* mins;
  HWY_INLINE Group Prepare(size_t) const { return {}; }
  template <size_t kJ>
  HWY_INLINE void Block(const Group&, size_t b, __m256i& w, __m256& sc) const {
    w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * b));
    float s[2];
    std::memcpy(s, scales + 8 * b, 8);
    sc = HalfScales(s[0], s[1]);
  }
};

#endif

}  // namespace HWY_NAMESPACE
}  // namespace fgemma
HWY_AFTER_NAMESPACE();

#endif  // FGEMMA_KERNELS_KQUANT_LEVELS_AVX2_INL_H_ toggle
