// Fast non-cryptographic 64-bit hashing for fingerprints and checksums (cache files, prefixes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fgemma {

// Hashes `size` bytes 8 at a time (FNV-style multiply, mixed); seedable to chain several buffers.
uint64_t Hash64(const void* data, size_t size, uint64_t seed = 0x9E3779B97F4A7C15ull);
inline uint64_t Hash64(std::string_view s, uint64_t seed = 0x9E3779B97F4A7C15ull) { return Hash64(s.data(), s.size(), seed); }

}  // namespace fgemma
