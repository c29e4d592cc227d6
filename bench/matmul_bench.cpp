// MatMul workbench: every weight type on the FunctionGemma-270M shapes, single thread.
//
// Names: matmul/<dtype>/<shape>/T<tokens>/<variant>, variant = a SIMD target from KernelTargets()
// ("AVX3_DL", "AVX2", ... forced via SetKernelTarget), "<target>+interleaved" (quantized weights in
// the row-interleaved or expanded copy PrepareWeights makes at load, where the target has one) or
// "reference" (MatMulReference, small cases only). Quantized cases include PackActivations in the timed loop (the runtime packs once per
// matmul); pack/<dtype>/... times packing alone.
// Counters: weight_GB/s = weight bytes streamed per second (the decode figure of merit),
// GFLOP/s = 2 * rows * cols * tokens per second (the prefill one).
//
// Examples:
//   matmul_bench --benchmark_filter='T1/AVX3_DL$'                 decode, best x86 target
//   matmul_bench --benchmark_filter='q8_0/.*T512/(AVX3_DL|AVX2)$' prefill, VNNI vs AVX2
//   matmul_bench --benchmark_filter='head.*T1/' --benchmark_repetitions=5
// The machine is shared: use repetitions and compare medians.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"
#include "util/float_types.h"

namespace fgemma {
namespace {

struct Shape {
  const char* name;
  size_t rows, cols;
};
const Shape kShapes[] = {{"q_1024x640", 1024, 640},     {"kv_256x640", 256, 640},   {"o_640x1024", 640, 1024},
                         {"gate_2048x640", 2048, 640},  {"down_640x2048", 640, 2048},
                         {"head_262144x640", 262144, 640}};
const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,
                        DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

// Deterministic, well-scaled weights (no denormals or NaNs to distort timings).
std::vector<uint8_t> MakeWeights(DType dtype, size_t rows, size_t cols) {
  std::vector<uint8_t> data(RowBytes(dtype, cols) * rows);
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  auto value = [&] { return static_cast<float>(static_cast<int32_t>(next() >> 8) - (1 << 23)) / (1 << 23); };
  const size_t n = rows * cols;
  uint8_t* p = data.data();
  if (dtype == DType::kF32) {
    for (size_t i = 0; i < n; ++i) {
      const float v = value();
      std::memcpy(p + 4 * i, &v, 4);
    }
  } else if (dtype == DType::kF16 || dtype == DType::kBF16) {
    for (size_t i = 0; i < n; ++i) {
      const float v = value();
      const uint16_t h = dtype == DType::kF16 ? F32ToF16(v) : F32ToBf16(v);
      std::memcpy(p + 2 * i, &h, 2);
    }
  } else if (!DTypeIsQ8OrQ4_0(dtype)) {  // the K-quant presets' types: encoded from the values
    std::vector<float> row(cols);
    for (size_t r = 0; r < rows; ++r) {
      for (float& v : row) v = value();
      QuantizeRowFn encode = WeightType(dtype).quantize_row;
      encode(row.data(), cols, p + r * RowBytes(dtype, cols));
    }
  } else {
    const size_t bb = DTypeBlockBytes(dtype);
    const uint16_t scale = F32ToF16(0.01f);
    for (size_t b = 0; b < n / 32; ++b) {
      std::memcpy(p + b * bb, &scale, 2);
      for (size_t i = 2; i < bb; ++i) p[b * bb + i] = static_cast<uint8_t>(next() >> 24);
    }
  }
  return data;
}

// The benchmarks run in registration order; keep only the current weight matrix alive (the head
// matrices are 90-670 MB).
const std::vector<uint8_t>& Weights(DType dtype, const Shape& shape) {
  static DType cached_type;
  static const Shape* cached_shape = nullptr;
  static std::vector<uint8_t> cached;
  if (cached_shape != &shape || cached_type != dtype) {
    cached = std::vector<uint8_t>();
    cached = MakeWeights(dtype, shape.rows, shape.cols);
    cached_shape = &shape;
    cached_type = dtype;
  }
  return cached;
}

std::vector<float> MakeActivations(size_t tokens, size_t cols) {
  std::vector<float> x(tokens * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  return x;
}

void RunMatMul(benchmark::State& state, DType dtype, const Shape* shape, size_t tokens, const std::string& variant) {
  const bool reference = variant == "reference";
  const std::string suffix = "+interleaved";
  const bool interleave = variant.size() > suffix.size() && variant.ends_with(suffix);
  const std::string target = interleave ? variant.substr(0, variant.size() - suffix.size()) : variant;
  if (!reference && !SetKernelTarget(target)) {
    state.SkipWithError("target not available");
    return;
  }
  const std::vector<uint8_t>& weights = Weights(dtype, *shape);
  KernelMatrix w{TensorView{dtype, shape->rows, shape->cols, weights.data()}};
  std::unique_ptr<uint8_t, decltype(&std::free)> interleaved(nullptr, &std::free);
  if (interleave) {  // the copy PrepareWeights makes at load (kernels/weight_prep.h)
    const size_t bytes = kernels_internal::InterleavedWeightBytes(w);
    if (bytes == 0) {
      state.SkipWithError("no interleaved kernel on this target");
      SetKernelTarget("");
      return;
    }
    interleaved.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    kernels_internal::InterleaveWeights(w, interleaved.get());
    w.repacked = interleaved.get();
  }
  const std::vector<float> x = MakeActivations(tokens, shape->cols);
  std::vector<float> y(tokens * shape->rows);
  std::vector<uint8_t> scratch(PackedActivationBytes(dtype, shape->cols, tokens) + 64);
  void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  Activations a{x.data(), shape->cols, tokens};
  for (auto _ : state) {
    if (reference) {
      MatMulReference(w, a, y.data(), shape->rows, 0, shape->rows);
    } else {
      PackActivations(dtype, shape->cols, &a, aligned);
      MatMul(w, a, y.data(), shape->rows, 0, shape->rows);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(iters * static_cast<double>(w.bytes()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      iters * 2.0 * shape->rows * shape->cols * tokens / 1e9, benchmark::Counter::kIsRate);
  SetKernelTarget("");
}

void RunPack(benchmark::State& state, DType dtype, size_t cols, size_t tokens) {
  const std::vector<float> x = MakeActivations(tokens, cols);
  std::vector<uint8_t> scratch(PackedActivationBytes(dtype, cols, tokens));
  Activations a{x.data(), cols, tokens};
  for (auto _ : state) {
    PackActivations(dtype, cols, &a, scratch.data());
    benchmark::DoNotOptimize(scratch.data());
  }
  state.counters["Melem/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * cols * tokens / 1e6, benchmark::Counter::kIsRate);
}

void RegisterAll() {
  std::vector<std::string> variants = KernelTargets();
  variants.insert(variants.begin(), variants.front() + "+interleaved");  // kept below where a copy exists
  variants.push_back("reference");
  for (DType dtype : kTypes) {
    for (const Shape& shape : kShapes) {
      const bool head = shape.rows > 100000;
      // 1: decode; 4-64: drafted and batched passes (issue 14); 512: prefill.
      for (size_t tokens : {size_t{1}, size_t{4}, size_t{8}, size_t{16}, size_t{64}, size_t{512}}) {
        for (const std::string& v : variants) {
          // The head: one token (decode), or several free-text positions of a drafted or batched
          // pass (LmHead::ComputeMany), on the interleaved copy the runtime uses.
          if (head && (tokens > 16 || (tokens > 1 && !v.ends_with("+interleaved")))) continue;
          if (v == "reference" && (head || tokens > 64)) continue;
          if (v.ends_with("+interleaved") && kernels_internal::InterleavedWeightBytes(TensorView{dtype, 16, 256, nullptr}) == 0)
            continue;
          if (shape.cols % DTypeBlockSize(dtype) != 0) continue;  // the K types' 256-value super-blocks
          const std::string name = std::string("matmul/") + DTypeName(dtype) + "/" + shape.name + "/T" +
                                   std::to_string(tokens) + "/" + v;
          benchmark::RegisterBenchmark(name.c_str(), RunMatMul, dtype, &shape, tokens, v)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    for (size_t tokens : {size_t{1}, size_t{512}}) {
      const std::string name = std::string("pack/") + DTypeName(dtype) + "/cols640/T" + std::to_string(tokens);
      benchmark::RegisterBenchmark(name.c_str(), RunPack, dtype, size_t{640}, tokens)->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace fgemma

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("kernel_target", fgemma::KernelTargetName());
  fgemma::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
