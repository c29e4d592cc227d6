#include "model/rope_tables.h"

#include "kernels/ops.h"

namespace fgemma {

RopeTables::RopeTables(const ModelConfig& c, size_t max_batch) : half_(static_cast<size_t>(c.head_dim) / 2) {
  const float thetas[2] = {c.rope_theta_local, c.rope_theta_global};
  const float scalings[2] = {1.0f, c.rope_scaling_factor};
  for (int k = 0; k < 2; ++k) {
    cos_[k] = FloatBuffer(max_batch * half_);
    sin_[k] = FloatBuffer(max_batch * half_);
    inv_freq_[k] = FloatBuffer(half_);
    RopeInverseFrequencies(thetas[k], scalings[k], static_cast<size_t>(c.head_dim), inv_freq_[k].data());
  }
}

void RopeTables::Fill(size_t start, size_t n, size_t row) {
  for (size_t k = 0; k < 2; ++k) {
    for (size_t t = 0; t < n; ++t)
      RopeAngles(inv_freq_[k].data(), half_, static_cast<int>(start + t), cos_[k].data() + (row + t) * half_,
                 sin_[k].data() + (row + t) * half_);
  }
}

}  // namespace fgemma
