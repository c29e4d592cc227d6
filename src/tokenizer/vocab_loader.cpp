// Tokenizer::FromVocab: a vocabulary given as GGUF stores it (strings, scores, token types) has no
// merge list. llama.cpp's SentencePiece tokenizer merges two adjacent symbols whenever their
// concatenation is a token, highest score first; the same rule is expressed here as a merge table
// (every split of every token into two tokens, ranked by the joined token's score), so the one BPE
// encoder serves both sources.
#include <algorithm>
#include <numeric>

#include "tokenizer/text_hash.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"

namespace fgemma {

using tokenizer_internal::TokenizerModel;

namespace {

constexpr const char* kWhat = "vocabulary";

Result<uint8_t> FlagsForType(int32_t type, const std::string& text, size_t index) {
  using namespace tokenizer_internal;
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal: return uint8_t{0};
    case TokenType::kUnknown: return uint8_t{kFlagUnused};  // only ever emitted by fallback, never by BPE
    case TokenType::kControl: return uint8_t{kFlagAdded | kFlagSpecial};
    case TokenType::kUserDefined: return static_cast<uint8_t>(kFlagAdded | (IsWhitespaceToken(text) ? kFlagPlain : 0));
    case TokenType::kUnused: return uint8_t{kFlagUnused};
    case TokenType::kByte: return uint8_t{kFlagByte};
  }
  return InvalidArgument(std::string(kWhat) + ": token_type[" + std::to_string(index) + "] = " + std::to_string(type) +
                         " is not a GGUF token type (1-6)");
}

// Ranks tokens by score, highest first. Equal scores share a rank, so that between them the leftmost
// pair merges first, as in llama.cpp (GGUF files give every added and byte token the score 0).
std::vector<uint32_t> RanksFromScores(const std::vector<float>& scores) {
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scores[a] > scores[b]; });
  std::vector<uint32_t> rank(scores.size());
  uint32_t r = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && scores[order[i]] != scores[order[i - 1]]) ++r;
    rank[order[i]] = r;
  }
  return rank;
}

// Every split of a usable token into two usable tokens becomes a merge. Looking up both halves of
// every split costs a token's length squared (a 1 MB token: minutes), so the prefix's hash grows
// byte by byte and a half is looked up only when some usable token has its length: the work is the
// vocabulary's bytes plus one lookup per split whose halves both have a token length. Returns the
// bytes read (merge_build_bytes).
uint64_t BuildMergesFromSplits(TokenizerModel& m, const std::vector<uint32_t>& rank) {
  std::vector<bool> usable_length;
  for (int32_t id = 0; id < m.size(); ++id) {
    if (!m.BpeUsable(id)) continue;
    const size_t len = m.Text(id).size();
    if (len >= usable_length.size()) usable_length.resize(len + 1, false);
    usable_length[len] = true;
  }
  const auto is_usable_length = [&](size_t len) { return len < usable_length.size() && usable_length[len]; };
  uint64_t bytes_read = 0;
  m.merges.Reserve(static_cast<size_t>(m.size()) * 2);
  for (int32_t id = 0; id < m.size(); ++id) {
    if (!m.BpeUsable(id)) continue;
    const std::string_view text = m.Text(id);
    uint64_t prefix_hash = tokenizer_internal::kTextHashSeed;
    size_t hashed = 0;  // prefix_hash covers text[0, hashed)
    // Split only between characters: symbols never hold part of a character.
    for (size_t cut = 0; cut < text.size();) {
      const size_t len = tokenizer_internal::Utf8CharLength(text, cut);
      cut += len == 0 ? 1 : len;
      if (cut >= text.size() || cut >= usable_length.size()) break;  // no longer prefix is a token
      if (!is_usable_length(cut) || !is_usable_length(text.size() - cut)) continue;
      prefix_hash = tokenizer_internal::HashTextExtend(prefix_hash, text.substr(hashed, cut - hashed));
      bytes_read += cut - hashed;
      hashed = cut;
      bytes_read += cut;  // comparing a candidate
      const int32_t left = m.FindHashed(text.substr(0, cut), prefix_hash);
      if (left < 0 || !m.BpeUsable(left)) continue;
      bytes_read += 2 * (text.size() - cut);  // hashing and comparing the rest
      const int32_t right = m.Find(text.substr(cut));
      if (right < 0 || !m.BpeUsable(right)) continue;
      m.merges.Set(left, right, tokenizer_internal::Merge{rank[id], id});
    }
  }
  return bytes_read;
}

}  // namespace

Result<Tokenizer> Tokenizer::FromVocab(const VocabSpec& spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return InvalidArgument(std::string(kWhat) + ": no tokens");
  if (n > INT32_MAX) return OutOfRange(std::string(kWhat) + ": more than 2^31 tokens");
  if (spec.scores.size() != n)
    return InvalidArgument(std::string(kWhat) + ": " + std::to_string(spec.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  if (spec.types.size() != n)
    return InvalidArgument(std::string(kWhat) + ": " + std::to_string(spec.types.size()) + " token types for " + std::to_string(n) + " tokens");

  for (size_t i = 0; i < n; ++i) {
    // A NaN would break the ordering that ranks merges.
    if (spec.scores[i] != spec.scores[i])
      return InvalidArgument(std::string(kWhat) + ": score[" + std::to_string(i) + "] is NaN");
  }

  auto model = std::make_shared<TokenizerModel>();
  TokenizerModel& m = *model;
  for (size_t i = 0; i < n; ++i) {
    FGEMMA_TRY(const uint8_t flags, FlagsForType(spec.types[i], spec.tokens[i], i));
    m.AppendToken(spec.tokens[i], flags);
    if (static_cast<TokenType>(spec.types[i]) == TokenType::kUnknown && m.unk_id < 0) m.unk_id = static_cast<int32_t>(i);
  }
  m.prepend_space = spec.add_space_prefix;
  m.bos_id = spec.bos_id;
  m.eos_ids = spec.eos_ids;
  FGEMMA_RETURN_IF_ERROR(tokenizer_internal::FinishModel(m, kWhat));
  m.merge_build_bytes = BuildMergesFromSplits(m, RanksFromScores(spec.scores));
  return Tokenizer(std::move(model));
}

}  // namespace fgemma
