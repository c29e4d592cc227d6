// Where speculative drafts come from (prompt lookup): the text a call is likely to write next is
// text it has seen. Argument values are mostly copied from the user's utterance ("kitchen", "40"),
// and an app sends similar commands again, so earlier outputs on the same catalog predict names,
// keys and values. The lookup finds where what has been written occurs in a source and proposes
// the text that follows it there. A proposal is only a guess: verification keeps exactly the
// tokens the model would have chosen, so a bad guess costs positions, not bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fgemma {

// Where a guessed token came from (for traces and per-source statistics).
enum class DraftSource : uint8_t {
  kHistory,       // an earlier output that begins with everything written so far
  kHistoryMatch,  // the text after a suffix of what is written, found in an earlier output
  kTextMatch,     // the same, found in other text (the utterance)
  kWord,          // a word of the utterance, where the grammar expects a key or a value
  kName,          // the tool the utterance names (CallGenerator: words of a function's name)
  kSlot,          // keys whose values the utterance says: an enum value, the one number (CallGenerator)
  kList,          // an array's next enum values in the schema's order ("mon" then "tue") (CallGenerator)
  kClose,         // the call's closing '}' after a value the utterance said (CallGenerator)
  kForm,          // an earlier call's string value with the utterance's numbers in its digits (CallGenerator)
};
inline constexpr size_t kDraftSourceCount = static_cast<size_t>(DraftSource::kForm) + 1;  // the last one
const char* DraftSourceName(DraftSource s);

// Candidate continuations (each at most max_bytes), best first, at most max_candidates, no two
// equal. The first `anchored` sources are earlier outputs: one that begins with the whole of
// `written` (also when nothing is written yet) comes first. Then, per source, the place after the
// longest suffix of `written` found there (at least one byte; up to 3 places of that length),
// longer matches first (ties: the earlier source, then the earlier place). With `words`, then every word of the first other source (the utterance) from its
// start: where the grammar expects a value (an enum, a number) the caller keeps the first word it
// accepts. With `words_first` (the caller is at a value: the utterance says it better than an
// earlier call), the words come before everything else.
//
// Each candidate carries how many guessed tokens it is worth (a guessed position costs a fraction
// of a pass, so weak evidence guesses little): a whole earlier output's beginning 16, a suffix match
// of 12 bytes or more 8, of 4 or more 4, a shorter one 2, a word 3 (6 with words_first: a value
// the caller checks ends where the word does).
struct DraftCandidate {
  std::string_view text;
  size_t max_tokens = 0;
  DraftSource source = DraftSource::kHistory;
  bool operator==(const DraftCandidate& o) const { return text == o.text && max_tokens == o.max_tokens; }
};
void LookupDrafts(std::string_view written, std::span<const std::string> sources, size_t anchored, size_t max_bytes,
                  bool words, size_t max_candidates, std::vector<DraftCandidate>* out, bool words_first = false);

}  // namespace fgemma
