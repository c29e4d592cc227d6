// The machine's arithmetic ceilings, one thread: how many 512-bit `vpdpbusd` (int8 dot products,
// 64 multiply-adds each: the x86 matrix kernels) and 512-bit float FMAs (16 each: attention) a core
// retires per second when nothing else limits them (12 independent accumulator chains, operands in
// registers). The kernels' figures (matmul_bench's GFLOP/s, attention_bench's keys/s) and the
// docs/CHANGELOG.md's bounds on batched throughput are read against these.
//
// Names: peak/vpdpbusd, peak/fma512. Counters: G_per_s (instructions), GMAC_per_s (multiply-adds).
// Elsewhere than x86 with AVX-512 VNNI the benchmarks report an error and measure nothing.
#include <benchmark/benchmark.h>

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FGEMMA_PEAK_X86 1
#endif

namespace fgemma {
namespace {

constexpr int kChains = 12;     // independent accumulators: more than latency x throughput
constexpr int64_t kRounds = 1 << 16;  // instructions per iteration: kChains * kRounds

#if FGEMMA_PEAK_X86
__attribute__((target("avx512f,avx512vnni"))) int32_t DpbusdRounds(int64_t rounds) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(1);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], w, x);
    asm volatile("" : "+v"(w), "+v"(x));  // operands stay in registers, not hoisted or folded
  }
  __m512i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  return _mm512_reduce_add_epi32(sum);
}

__attribute__((target("avx512f"))) float FmaRounds(int64_t rounds) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  __m512 w = _mm512_set1_ps(0.999999f), x = _mm512_set1_ps(1e-7f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], w, x);
    asm volatile("" : "+v"(w), "+v"(x));
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}
#endif

void Report(benchmark::State& state, double macs_per_instruction) {
  const double instructions = static_cast<double>(state.iterations()) * kChains * kRounds;
  state.counters["G_per_s"] = benchmark::Counter(instructions / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMAC_per_s"] =
      benchmark::Counter(instructions * macs_per_instruction / 1e9, benchmark::Counter::kIsRate);
}

void BM_Vpdpbusd(benchmark::State& state) {
#if FGEMMA_PEAK_X86
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni")) {
    for (auto _ : state) benchmark::DoNotOptimize(DpbusdRounds(kRounds));
    Report(state, 64);
    return;
  }
#endif
  state.SkipWithError("needs x86 with AVX-512 VNNI");
}

void BM_Fma512(benchmark::State& state) {
#if FGEMMA_PEAK_X86
  if (__builtin_cpu_supports("avx512f")) {
    for (auto _ : state) benchmark::DoNotOptimize(FmaRounds(kRounds));
    Report(state, 16);
    return;
  }
#endif
  state.SkipWithError("needs x86 with AVX-512");
}

BENCHMARK(BM_Vpdpbusd)->Name("peak/vpdpbusd");
BENCHMARK(BM_Fma512)->Name("peak/fma512");

}  // namespace
}  // namespace fgemma

BENCHMARK_MAIN();
