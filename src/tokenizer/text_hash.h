// The string hash of the tokenizer's tables (token text index, word cache).
#pragma once

#include <cstdint>
#include <string_view>

namespace fgemma::tokenizer_internal {

// FNV-1a, 64-bit: token strings and words are short, so a byte loop is as fast as anything fancier.
// It reads left to right, so the hash of a longer prefix continues from a shorter one's
// (HashTextExtend): the GGUF merge builder hashes every prefix of a token in one pass.
inline constexpr uint64_t kTextHashSeed = 0xcbf29ce484222325ull;

inline uint64_t HashTextExtend(uint64_t h, std::string_view more) {
  for (char c : more) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

inline uint64_t HashText(std::string_view s) { return HashTextExtend(kTextHashSeed, s); }

}  // namespace fgemma::tokenizer_internal
