// Float32 storage of a fixed size, allocated once (KV cache rows, forward scratch).
#pragma once

#include <cstddef>
#include <memory>

namespace fgemma {

// Allocated once and never resized, so decoding allocates nothing. Large buffers come from the OS
// lazily (make_unique_for_overwrite does not touch the pages), so an unused context costs address
// space, not RAM.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t n) : data_(std::make_unique_for_overwrite<float[]>(n)), size_(n) {}
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<float[]> data_;
  size_t size_ = 0;
};

}  // namespace fgemma
