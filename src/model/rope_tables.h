// Rotary position embedding tables of a forward chunk: per layer kind (sliding layers use base
// rope_theta_local, global ones rope_theta_global with linear scaling), the inverse frequencies,
// fixed at creation, and the cos/sin of each position of the current chunk, filled per chunk so
// every layer of that kind reuses them.
#pragma once

#include <cstddef>

#include "model/config.h"
#include "model/float_buffer.h"

namespace fgemma {

class RopeTables {
 public:
  RopeTables() = default;
  RopeTables(const ModelConfig& config, size_t max_batch);

  // Angles of positions [start, start + n) into the chunk's rows [row, row + n), row + n <= max_batch
  // (a pass over several sequences fills one run of rows per sequence).
  void Fill(size_t start, size_t n, size_t row = 0);
  // cos/sin[head_dim / 2] of the chunk's token t, for layers of `kind`.
  const float* cos(LayerKind kind, size_t t) const { return cos_[Index(kind)].data() + t * half_; }
  const float* sin(LayerKind kind, size_t t) const { return sin_[Index(kind)].data() + t * half_; }

 private:
  static size_t Index(LayerKind kind) { return kind == LayerKind::kGlobal ? 1 : 0; }

  size_t half_ = 0;                      // head_dim / 2
  FloatBuffer inv_freq_[2];              // [half] per layer kind (0 sliding, 1 global)
  FloatBuffer cos_[2], sin_[2];          // [max_batch, half] per layer kind
};

}  // namespace fgemma
