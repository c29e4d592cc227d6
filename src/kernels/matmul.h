// Matrix kernels: Y = X * W^T for weight matrices in any storage type.
//
//   W: KernelMatrix [rows=out, cols=in] (f32, f16, bf16, q8_0, q4_0; util/weight_types.h), usually
//      mmapped, possibly repacked for the running target (kernels/weight_prep.h)
//   X: num_tokens activation rows of `in` floats
//   Y: num_tokens rows; this call writes columns [row_begin, row_end) of each
//
// Callers (the runtime) split [0, out) across threads and call MatMul once per slice, so each
// kernel is single-threaded. Integer kernels want the activations quantized once per matmul, not
// once per slice: PackActivations() does that into caller-owned scratch, and every MatMul call on the
// same activations reuses it. Every SIMD path has a scalar reference (MatMulReference) and tests.
//
// Numerics: float weights (f32/f16/bf16) are widened exactly and accumulated with float32 FMA on
// float32 activations: |y - reference| <= cols * 2^-24 * sum |w x|. Quantized weights (q8_0/q4_0)
// run on activations quantized to int8 per 32-block (exact int32 block dots, float32 scaling):
// ~0.5% relative RMS error vs the float reference, ~1.2% with outlier channels (details in
// kernels/matmul_quant.cpp).
//
// Dispatch: Highway compiles each kernel for several SIMD targets (kernels/simd_config.h: AVX-512
// VNNI, AVX-512, AVX2, SSE4 and scalar on x86; NEON and scalar on Arm) and picks the best one the
// CPU supports on first use. Register tiles of several weight rows x several tokens reuse each
// loaded weight vector across tokens (prefill); with one token the same code streams rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/tensor.h"

namespace fgemma {

struct Activations {
  const float* data = nullptr;  // [num_tokens, stride] float32
  size_t stride = 0;            // floats between consecutive tokens (>= cols)
  size_t num_tokens = 0;
  // Packed form for integer kernels (see PackActivations); null when the weight type needs none.
  const void* packed = nullptr;
  size_t packed_stride = 0;     // bytes between consecutive tokens in `packed`
};

// Bytes of scratch PackActivations needs for `num_tokens` rows of `cols` values against weights
// of type `weight_type` (0 when that type computes directly on float activations).
size_t PackedActivationBytes(DType weight_type, size_t cols, size_t num_tokens);
// Fills a.packed / a.packed_stride from a.data into `scratch` (PackedActivationBytes bytes; 64-byte
// alignment is best, any works). For quantized weights: int8 per 32-block (see
// kernels/matmul_quant.cpp for the accuracy); one packing serves every quantized weight type and
// every SIMD target, so q8_0 and q4_0 matrices may share it. MatMul packs by itself (per call) when
// a.packed is null.
void PackActivations(DType weight_type, size_t cols, Activations* a, void* scratch);

// A weight matrix as the kernels take it: the stored view (what loaders, writers and fingerprints
// read; always valid) plus, when PrepareWeights (kernels/weight_prep.h) repacked it, a copy in a
// layout private to the kernels of the running target. Everything outside kernels/ treats
// `repacked` as opaque; a KernelMatrix passed where a TensorView is expected is its stored form.
struct KernelMatrix : TensorView {
  const void* repacked = nullptr;
};

// y[t * y_stride + r] = dot(W[r, :], x_t) for r in [row_begin, row_end), t in [0, a.num_tokens).
void MatMul(const KernelMatrix& w, const Activations& a, float* y, size_t y_stride, size_t row_begin, size_t row_end);
// y[i] = dot(W[rows[i], :], x_0) for one token (a.num_tokens == 1), for a restricted LM head that
// computes only some rows. A repacked matrix gives the same bits as those rows of a whole-matrix
// MatMul (each row's panel is computed, and reused for neighbouring rows); the stored layout runs
// each row as a one-row slice.
void MatMulRows(const KernelMatrix& w, const Activations& a, std::span<const int32_t> rows, float* y);

// Scalar reference: dequantizes each row to float and accumulates in double. Used by tests only.
void MatMulReference(const TensorView& w, const Activations& a, float* y, size_t y_stride, size_t row_begin,
                     size_t row_end);

// Repacked weights. On AVX-512 VNNI the quantized matrices (q8_0, q4_0) are repacked into a copy
// that interleaves 16 rows, on Arm with the int8 dot product into panels of 4 rows
// (kernels/matmul_internal.h). With w.repacked set, MatMul reads the copy for row slices that start
// at a panel (a multiple of 16 rows: the runtime's slices always do) and computes
// every output exactly as the per-token order below, whatever the number of tokens:
//   y = fold over blocks b: y = fma(float(int32 dot of block b), float(dw_b * dx_b), y), from 0,
// so a batch of tokens gives bit-identical outputs to the same tokens one at a time.
//
// Rows [r0, r1) of `w` as a matrix of their own; keeps the repacked copy when r0 starts a panel
// (a multiple of 16 rows, or of 4 on Arm), else drops it. The interleaved kernels' output rows do not depend on the
// slicing, so a slice gives the same bits as the same rows of the whole matrix.
KernelMatrix RowSlice(const KernelMatrix& w, size_t r0, size_t r1);
// Row r as float32, like DequantizeRow, but read from the repacked copy when there is one (the
// stored pages of a repacked matrix were released at load; reading them back would grow RSS).
void LookupRow(const KernelMatrix& w, size_t r, float* out);

// The SIMD target chosen at run time ("AVX3_DL", "AVX3", "AVX2", "SSE4", "NEON", "NEON_DOTPROD",
// "SCALAR", ...). NEON_DOTPROD: Arm's dot-product matrix kernels (kernels/cpu_features.h) beside
// Highway's NEON ones.
const char* KernelTargetName();

// Tests and benchmarks: the targets compiled into this binary that this CPU runs, best first.
std::vector<std::string> KernelTargets();
// Tests and benchmarks: dispatch every kernel (MatMul, PackActivations, vec.h) to the named target
// from KernelTargets(); "" restores the automatic choice. Returns false for an unknown name. Not
// thread-safe: call it while no kernel runs. (The packed activation layout is the same for every
// target.)
bool SetKernelTarget(const std::string& name);

}  // namespace fgemma
