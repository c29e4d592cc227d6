// Elementwise and row-wise operations of the Gemma 3 forward pass, float32 throughout (they are a
// small share of the time; the matrix kernels dominate).
//
// RmsNorm, ApplyRope and AddInPlace run Highway's vector code on Arm (NEON on aarch64 and armhf,
// kernels/ops_simd.cpp) and their scalar references (the *Reference functions) on other
// architectures, whose outputs so stay those of the code they replaced (x86's vector units would
// change the bits: reduction order, FMA contraction in AVX2 code). Softmax is vector code on every
// target: attention runs one per query head and visible key, and the reference's scalar exp took
// about 30 % of an x86 attention row. Vector code sums rows in float32 lanes (the references sum in
// double) and Softmax's exp is Highway's (1 ulp), so x86 targets differ from one another in the last
// bits of a softmax (the catalog cache is keyed by the target). Every output depends only on its
// row's values and length, never on alignment or on the rows batched with it.
#pragma once

#include <cstddef>

namespace fgemma {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * scale[i]; `scale` already holds Gemma's (1 + w).
// In place is allowed (out == x).
void RmsNorm(const float* x, const float* scale, float eps, size_t n, float* out);
void RmsNormReference(const float* x, const float* scale, float eps, size_t n, float* out);
// RmsNorm of `rows` rows (x + r * x_stride into out + r * out_stride; in place allowed), each with
// the bits RmsNorm gives it alone. The scalar reference sums rows four at a time: its double sums
// are one dependent chain per row, and four chains overlap where one waits on each add.
void RmsNormRows(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows, float* out,
                 size_t out_stride);
void RmsNormRowsReference(const float* x, size_t x_stride, const float* scale, float eps, size_t n, size_t rows,
                          float* out, size_t out_stride);

// gate[i] = gelu_tanh(gate[i]) * up[i], scalar reference of vec.h's GeluTanhMul.
void GeluTanhMulReference(float* gate, const float* up, size_t n);

// Split-half rotary embedding of one head vector `x[dim]` with precomputed cos/sin[dim/2].
void ApplyRope(float* x, const float* cos, const float* sin, size_t dim);
void ApplyRopeReference(float* x, const float* cos, const float* sin, size_t dim);

// Fills cos/sin[dim/2] for `position` with inverse frequencies `inv_freq[dim/2]`, in float32 like
// the reference (angle = float(position) * inv_freq).
void RopeAngles(const float* inv_freq, size_t half, int position, float* cos, float* sin);

// inv_freq[i] = 1 / (theta ** (2i / dim)) / scaling, float32 like the reference.
void RopeInverseFrequencies(float theta, float scaling, size_t dim, float* inv_freq);

// In-place softmax over x[n] (max-subtracted, float32).
void Softmax(float* x, size_t n);
void SoftmaxReference(float* x, size_t n);

// y[i] += x[i]
void AddInPlace(float* y, const float* x, size_t n);
void AddInPlaceReference(float* y, const float* x, size_t n);

}  // namespace fgemma
