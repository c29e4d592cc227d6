// Highway target selection shared by every kernel translation unit. Include it before any hwy
// header (each kernel .cpp does so first) so all dispatch tables cover the same targets.
//
// Compiled targets (2-core build machine: compile time matters):
//   x86:  AVX3_DL (AVX-512 + VNNI: Ice Lake, Sapphire Rapids, Zen 4), AVX3 (AVX-512 BW: Skylake-X),
//         AVX2 (+FMA, F16C), SSE4, and the scalar fallback (GCC < 12.3 cannot build EMU128).
//   Arm:  NEON (armv7 and aarch64) plus the scalar/EMU128 fallback; SVE is not compiled.
// SSSE3 machines (pre-2008) use the scalar fallback.
#pragma once

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
