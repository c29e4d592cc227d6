// Attention workbench: one query position (a group of heads sharing a KV head, head_dim 256 as in
// FunctionGemma-270M) against `keys` keys, single thread: scores, softmax and the value mix.
//
// Names: attention/<step>/G<heads>/K<keys>/<kv>, step = scores | softmax | mix | all, kv = hot
// (one layer's keys and values, reused: they stay in cache) or cold (a new layer's each iteration,
// cycling over 64 MiB: read from memory, as decode reads 18 layers' worth per token).
// Counters: kv_GB/s = key and value bytes read per second (the step's own: keys for scores,
// values for mix, both for all), keys/s.
//
// Examples:
//   attention_bench --benchmark_filter='all/G4/K512/'      hot vs cold: compute or memory bound
//   attention_bench --benchmark_filter='scores/G[24]/'     two heads per task against four
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ops.h"

namespace fgemma {
namespace {

constexpr size_t kHeadDim = 256;
constexpr size_t kColdBytes = size_t{64} << 20;

enum class Step { kScores, kSoftmax, kMix, kAll };

void BM_Attention(benchmark::State& state, Step step, size_t groups, size_t keys, bool cold) {
  const size_t layer_floats = keys * kHeadDim;  // keys or values of one layer
  const size_t layers = cold ? kColdBytes / (2 * layer_floats * sizeof(float)) + 1 : 1;
  std::vector<float> kv(2 * layers * layer_floats);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<float>(static_cast<int>(i % 61) - 30) / 64.0f;
  std::vector<float> q(groups * kHeadDim, 0.01f), scores(groups * keys), out(groups * kHeadDim);
  size_t layer = 0;
  for (auto _ : state) {
    const float* k = kv.data() + 2 * layer * layer_floats;
    const KvRun key_run{k, keys}, value_run{k + layer_floats, keys};
    if (step == Step::kScores || step == Step::kAll)
      AttentionScores(q.data(), kHeadDim, groups, &key_run, 1, kHeadDim, kHeadDim, scores.data(), keys);
    if (step == Step::kSoftmax || step == Step::kAll) {
      if (step == Step::kSoftmax) std::fill(scores.begin(), scores.end(), 0.5f);
      for (size_t g = 0; g < groups; ++g) Softmax(scores.data() + g * keys, keys);
    }
    if (step == Step::kMix || step == Step::kAll)
      AttentionMix(scores.data(), keys, groups, &value_run, 1, kHeadDim, kHeadDim, out.data(), kHeadDim);
    benchmark::DoNotOptimize(out.data());
    layer = (layer + 1) % layers;
  }
  const double bytes_per_iter = static_cast<double>(layer_floats * sizeof(float)) *
                                (step == Step::kAll ? 2 : step == Step::kSoftmax ? 0 : 1);
  state.counters["kv_GB/s"] = benchmark::Counter(bytes_per_iter * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.counters["keys/s"] =
      benchmark::Counter(static_cast<double>(keys * state.iterations()), benchmark::Counter::kIsRate);
}

void Register() {
  const std::pair<Step, const char*> steps[] = {
      {Step::kScores, "scores"}, {Step::kSoftmax, "softmax"}, {Step::kMix, "mix"}, {Step::kAll, "all"}};
  for (const auto& [step, step_name] : steps) {
    for (size_t groups : {1, 2, 4}) {
      for (size_t keys : {64, 512, 900}) {
        for (bool cold : {false, true}) {
          const std::string name = std::string("attention/") + step_name + "/G" + std::to_string(groups) + "/K" +
                                   std::to_string(keys) + (cold ? "/cold" : "/hot");
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { BM_Attention(s, step, groups, keys, cold); });
        }
      }
    }
  }
}

}  // namespace
}  // namespace fgemma

int main(int argc, char** argv) {
  fgemma::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
