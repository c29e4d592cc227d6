// The string hash of the tokenizer's tables (token text index, word cache).
#pragma once

#include <cstdint>
#include <string_view>

namespace fgemma::tokenizer_internal {

// FNV-1a, 64-bit: token strings and words are short, so a byte loop is as fast as anything fancier.
inline uint64_t HashText(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace fgemma::tokenizer_internal
