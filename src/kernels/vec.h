// Small float32 vector helpers for the model (norms, attention), runtime-dispatched like MatMul.
// All accept any alignment and any n (including 0).
#pragma once

#include <cstddef>

namespace fgemma {

// sum_i a[i] * b[i], accumulated in float32 lanes (error <= n * 2^-24 * sum |a_i b_i|).
float Dot(const float* a, const float* b, size_t n);
// y[i] += s * x[i]  (one fused multiply-add per element).
void AddScaled(float* y, const float* x, float s, size_t n);
// y[i] += sum_j c[j] * rows[j * stride + i] for i < n, j < k: a combination of k rows added to y
// (a LoRA update B'(A x) with B' stored transposed). Each y[i] takes the k multiply-adds (fused on
// targets with FMA) in the order j = 0, 1, ..., so its bits do not depend on n or on where the
// range starts.
void AddRowCombination(float* y, const float* rows, size_t stride, const float* c, size_t k, size_t n);
// y[i] *= s.
void Scale(float* y, float s, size_t n);
// gate[i] = gelu_tanh(gate[i]) * up[i] (as g / (1 + exp(-2u)): a few ulp of g * up;
// GeluTanhMulReference in ops.h is the scalar reference).
void GeluTanhMul(float* gate, const float* up, size_t n);
// The largest of the values of x[0..n) that are not NaN (-inf if none): the LM head's arg-max
// skips a block of logits whose largest is below the best so far (a NaN never wins its `>`).
float MaxValue(const float* x, size_t n);

}  // namespace fgemma
