// Token-level view of a CallGrammar: which vocabulary entries the matcher accepts next, and the
// canonical tokens of a continuation the grammar forces.
//
// The vocabulary's byte strings are sorted once; the allowed-token search walks them in order,
// reusing the matcher state of the common prefix with the previous entry and skipping every entry
// that shares a refused prefix (an implicit trie), so a step costs the accepted bytes plus one
// comparison per entry.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/call_grammar.h"
#include "tokenizer/tokenizer.h"

namespace fgemma {

class ConstraintVocab {
 public:
  static Result<ConstraintVocab> Build(const Tokenizer& tokenizer);

  struct TextSet {
    std::vector<uint64_t> mask;
    size_t count = 0;
  };
  struct Scratch {
    std::vector<CallMatcher> states;  // matcher after 0..max_len bytes of the current entry
    TextSet room_set;                 // a free-text set cut to the room left under a cap
  };
  Scratch NewScratch(const CallMatcher& prototype) const;

  // Ordinary tokens accepted in free text (inside a string or a text answer, with room for the
  // longest token): nearly the whole vocabulary, and the same set for every grammar and request in
  // the same text state (CallMatcher::TextState), so it is computed once per state and shared by all
  // generators and threads, as a bitmask over token ids. Near a length cap the set is that one less
  // the tokens needing more room than is left (a bitmask pass into the Scratch, not a search).
  // The tokens the matcher accepts next. Either `*text` is set to a free-text set (shared, or in
  // `scratch` until the next call) and `out` (cleared first) gets the accepted control tokens only, or `*text` is null and `out` gets every
  // accepted token id (in no particular order). `scratch` must come from NewScratch().
  void Allowed(const CallMatcher& state, Scratch& scratch, std::vector<int32_t>* out, const TextSet** text) const;
  // The free-text set of text state `key` (CallMatcher::TextState's) with room for every token:
  // built on first use from the text rules alone, then shared by every grammar and thread.
  const TextSet& SharedTextSet(uint32_t key) const;
  // The search itself, over every ordinary token (Allowed adds control tokens and caching).
  void Search(const CallMatcher& state, Scratch& scratch, std::vector<int32_t>* out) const;

  // The text token `id` stands for: its bytes, or a control token's literal ("<escape>").
  std::string TokenText(int32_t id) const;
  // The tokenizer the vocabulary was built from.
  const Tokenizer& tokenizer() const { return *tokenizer_; }

  // Feeds token `id` to the matcher; false if refused.
  bool FeedToken(CallMatcher& m, int32_t id) const;

  // The run of symbols the grammar forces from `state` (empty when it offers a choice), as canonical
  // tokens: text runs encoded by the tokenizer, control symbols as their ids. A text run that ends
  // at a choice leaves out its last token (a token spanning into the choice is allowed there too).
  void ForcedTokens(const CallMatcher& state, std::vector<int32_t>* out) const;

  int32_t vocab_size() const { return static_cast<int32_t>(symbol_of_.size()); }
  // Control symbol of token `id` (>= 256), -1 for a byte token, -2 for one never generated.
  int SymbolOf(int32_t id) const { return symbol_of_[static_cast<size_t>(id)]; }
  // The most text room any token needs (below it, Allowed cuts the free-text set by room).
  size_t max_token_room() const { return max_need_; }

 private:
  const Tokenizer* tokenizer_ = nullptr;
  std::vector<std::string> bytes_;       // decoded bytes per id ("" for symbol/never tokens)
  std::vector<int16_t> symbol_of_;       // per id: control symbol (kSym*), -1 = bytes, -2 = never
  std::vector<int32_t> symbol_token_;    // per control symbol - 256: token id
  std::vector<int32_t> order_;           // byte-token ids sorted by bytes
  std::vector<uint16_t> lcp_;            // common prefix with the previous entry in order_
  size_t max_len_ = 0;
  std::vector<uint16_t> need_;           // per id: text room a byte token needs (see Build)
  size_t max_need_ = 0;
  std::vector<int32_t> by_need_;         // byte-token ids, largest need first
  struct TextSetCache {
    std::mutex mu;
    std::vector<std::pair<uint32_t, std::unique_ptr<const TextSet>>> sets;  // never shrinks
  };
  std::shared_ptr<TextSetCache> text_sets_ = std::make_shared<TextSetCache>();
};

}  // namespace fgemma
