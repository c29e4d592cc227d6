// Weight preparation: a model hands its matrices to the kernels once, at load, and the kernels of
// the running SIMD target may repack them into a layout of their own (today the AVX-512 VNNI
// kernels' 16-row interleave of q8_0/q4_0 matrices, or the 4-row panels of Arm's dot-product
// kernels; on every target the expanded rows of q4_1, q5_0, q5_1, q4_K, q5_K and q6_K matrices:
// int8 levels with float scales, 1.375 bytes a value; kernels/matmul_internal.h). Callers see only
// KernelMatrix::repacked (opaque) and an owner object; layouts, buffers and the environment switch
// stay in kernels/.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "kernels/matmul.h"

namespace fgemma {

class PreparedWeights;
PreparedWeights PrepareWeights(std::span<KernelMatrix* const> matrices, int threads = 2);  // below

// Owns the repacked copies PrepareWeights made. Keep it alive while the matrices are in use.
class PreparedWeights {
 public:
  // Bytes of the repacked copies (0 when every matrix is used as stored).
  size_t repacked_bytes() const { return bytes_; }
  // The name of the layout the kernels read the matrices in: "" when every matrix is read as stored,
  // "interleaved" when any was copied (AVX-512 VNNI's 16-row interleave, Arm's dot-product panels,
  // the expanded rows of the K-quant family; the SIMD target name tells the first two apart).
  // Repacked kernels may round differently from the stored layout's, so state computed with them
  // (cache files) binds this with the SIMD target.
  const std::string& layout() const { return layout_; }

 private:
  friend PreparedWeights PrepareWeights(std::span<KernelMatrix* const> matrices, int threads);
  std::shared_ptr<void> buffer_;
  size_t bytes_ = 0;
  std::string layout_;
};

// Repacks each of `matrices` (setting its `repacked`) whose type the running target's kernels read
// faster in a layout of their own; the others are left as they are. The stored pages of a repacked
// matrix are then released from the resident set (they stay mapped, for readers of the stored form,
// and are re-read from the file only if touched), so the matrices should live in file mappings:
// whole pages of anonymous memory inside a repacked matrix would read back as zeros. Setting FGEMMA_INTERLEAVE=0 in the environment
// keeps every matrix in the stored layout (for comparisons). Call it once per set of matrices,
// before any kernel reads them. Never fails: without memory for the copies, the stored layout is
// used.
// `threads` (1 or 2) fill the copies: 2 overlap the first-touch page faults; 1 keeps the work on
// the calling thread (a one-thread run stays one thread, and an instruction count under qemu-user,
// whose counter is not atomic across guest threads, stays exact: scripts/arm-cost.sh).
PreparedWeights PrepareWeights(std::span<KernelMatrix* const> matrices, int threads);

}  // namespace fgemma
