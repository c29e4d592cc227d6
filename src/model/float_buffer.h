// Float32 storage of a fixed size, allocated once (KV cache rows, forward scratch).
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace fgemma {

// Allocated once and never resized, so decoding allocates nothing. Large buffers come from the OS
// lazily (the storage is not initialized, so the pages are not touched), so an unused context
// costs address space, not RAM.
//
// The storage starts on a cache line (kAlignment): malloc gives 16 bytes, and a KV row or a query
// read with 64-byte vectors would then straddle two cache lines on every load (AVX-512 attention
// ran ~13 % slower with keys and values in cache).
class FloatBuffer {
 public:
  static constexpr size_t kAlignment = 64;
  FloatBuffer() = default;
  explicit FloatBuffer(size_t n)
      : data_(static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t{kAlignment}))), size_(n) {}
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{kAlignment}); }
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

}  // namespace fgemma
