#include "kernels/weight_prep.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/matmul_internal.h"
#include "util/mapped_file.h"

namespace fgemma {

PreparedWeights PrepareWeights(std::span<KernelMatrix* const> matrices, int threads) {
  PreparedWeights prepared;
  // FGEMMA_INTERLEAVE=0 keeps the stored layout (for comparisons: its kernels then run).
  if (const char* env = std::getenv("FGEMMA_INTERLEAVE"); env != nullptr && std::string(env) == "0") return prepared;
  // One 64-byte aligned buffer for every matrix the running kernels read in a layout of their own
  // (q8_0/q4_0 on AVX-512 VNNI or Arm's dot product, the K-quant family everywhere); none for float
  // weights.
  std::vector<std::pair<KernelMatrix*, size_t>> views;  // matrix, offset of its copy in the buffer
  size_t total = 0;
  for (KernelMatrix* m : matrices) {
    const size_t bytes = kernels_internal::InterleavedWeightBytes(*m);
    if (bytes == 0) continue;
    views.emplace_back(m, total);
    total += (bytes + 63) / 64 * 64;
  }
  if (total == 0) return prepared;
  constexpr size_t kHugePage = size_t{2} << 20;  // fewer page faults while filling it
  const size_t allocated = (total + kHugePage - 1) / kHugePage * kHugePage;
  void* buffer = std::aligned_alloc(kHugePage, allocated);
  if (buffer == nullptr) return prepared;  // keep computing from the stored layout
#ifdef MADV_HUGEPAGE
  madvise(buffer, allocated, MADV_HUGEPAGE);
#endif
  prepared.buffer_.reset(buffer, [](void* p) { std::free(p); });
  prepared.bytes_ = total;
  prepared.layout_ = "interleaved";
  for (auto [m, offset] : views) m->repacked = static_cast<uint8_t*>(buffer) + offset;
  // Filling it is mostly first-touch page faults (zeroing fresh pages): two threads (unless told
  // one) share chunks of 4096 rows (whole panels, so each chunk is a RowSlice with its own part of
  // the copy).
  struct Chunk {
    const KernelMatrix* m;
    size_t r0, r1;
  };
  std::vector<Chunk> chunks;
  for (auto [m, offset] : views) {
    for (size_t r0 = 0; r0 < m->rows; r0 += 4096) chunks.push_back({m, r0, std::min(m->rows, r0 + 4096)});
  }
  auto fill = [&chunks](size_t first, size_t step) {
    for (size_t i = first; i < chunks.size(); i += step) {
      const KernelMatrix slice = RowSlice(*chunks[i].m, chunks[i].r0, chunks[i].r1);
      kernels_internal::InterleaveWeights(slice, const_cast<void*>(slice.repacked));
      // The stored form stays mapped (convert, fingerprints) but leaves RSS until read again.
      ReleaseMappedPages(slice.data, slice.bytes());
    }
  };
  if (threads <= 1) {
    fill(0, 1);
    return prepared;
  }
  std::thread helper(fill, 1, 2);
  fill(0, 2);
  helper.join();
  return prepared;
}

}  // namespace fgemma
