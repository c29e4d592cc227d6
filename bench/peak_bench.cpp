// The machine's arithmetic ceilings, one thread: how many 512-bit `vpdpbusd` (int8 dot products,
// 64 multiply-adds each: the x86 matrix kernels) and 512-bit float FMAs (16 each: attention) a core
// retires per second when nothing else limits them (12 independent accumulator chains, operands in
// registers). The kernels' figures (matmul_bench's GFLOP/s, attention_bench's keys/s) and the
// docs/CHANGELOG.md's bounds on batched throughput are read against these.
//
// Also the AVX2 int8 ceiling (`vpmaddubsw`, 32 multiply-adds into int16 pairs: the AVX2 kernels'
// inner instruction) and one thread's read bandwidth (summing 512 MiB, more than any cache), the
// roofline decode is measured against (scripts/compare-llama.sh).
//
// Names: peak/vpdpbusd, peak/fma512, peak/vpmaddubsw256, peak/read. Counters: G_per_s
// (instructions), GMAC_per_s (multiply-adds), bytes_per_second (read). A benchmark whose
// instructions the CPU lacks reports an error and measures nothing.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

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

__attribute__((target("avx2"))) int32_t MaddubsRounds(int64_t rounds) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi16(static_cast<int16_t>(i));
  __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(1);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_maddubs_epi16(w, _mm256_xor_si256(acc[i], x));
    asm volatile("" : "+x"(w), "+x"(x));
  }
  __m256i sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_epi16(sum, acc[i]);
  return _mm256_extract_epi32(sum, 0);
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

void BM_Maddubs256(benchmark::State& state) {
#if FGEMMA_PEAK_X86
  if (__builtin_cpu_supports("avx2")) {
    for (auto _ : state) benchmark::DoNotOptimize(MaddubsRounds(kRounds));
    Report(state, 32);
    return;
  }
#endif
  state.SkipWithError("needs x86 with AVX2");
}

// One thread reading 512 MiB (written once first, so every page is real memory) with four
// independent sums; the compiler vectorizes the loop for the build's target.
void BM_Read(benchmark::State& state) {
  std::vector<uint64_t> buffer(size_t{512} << 17, 1);  // 512 MiB
  for (auto _ : state) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < buffer.size(); i += 4) {
      s0 += buffer[i];
      s1 += buffer[i + 1];
      s2 += buffer[i + 2];
      s3 += buffer[i + 3];
    }
    benchmark::DoNotOptimize(s0 + s1 + s2 + s3);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(buffer.size() * sizeof(uint64_t)));
}

BENCHMARK(BM_Vpdpbusd)->Name("peak/vpdpbusd");
BENCHMARK(BM_Maddubs256)->Name("peak/vpmaddubsw256");
BENCHMARK(BM_Read)->Name("peak/read")->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(false);
BENCHMARK(BM_Fma512)->Name("peak/fma512");

}  // namespace
}  // namespace fgemma

BENCHMARK_MAIN();
