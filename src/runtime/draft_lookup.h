// Where speculative drafts come from (prompt lookup): the text a call is likely to write next is
// text it has seen. Argument values are mostly copied from the user's utterance ("kitchen", "40"),
// and an app sends similar commands again, so earlier outputs on the same catalog predict names,
// keys and values. The lookup finds where what has been written occurs in a source and proposes
// the text that follows it there. A proposal is only a guess: verification keeps exactly the
// tokens the model would have chosen, so a bad guess costs positions, not bits.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fgemma {

// Candidate continuations (each at most max_bytes), best first, at most max_candidates, no two
// equal. The first `anchored` sources are earlier outputs: one that begins with the whole of
// `written` (also when nothing is written yet) comes first. Then, per source, the place after the
// longest suffix of `written` found there (at least one byte), longer matches first (ties: the
// earlier source). With `words`, then every word of the other sources (the utterance) from its
// start: where the grammar expects a value (an enum, a number) the caller keeps the first word it
// accepts.
//
// Each candidate carries how many guessed tokens it is worth (a guessed position costs a fraction
// of a pass, so weak evidence guesses little): a whole earlier output's beginning 16, a suffix match
// of 12 bytes or more 8, of 4 or more 4, a shorter one 2, a word 3.
struct DraftCandidate {
  std::string_view text;
  size_t max_tokens = 0;
  bool operator==(const DraftCandidate&) const = default;
};
void LookupDrafts(std::string_view written, std::span<const std::string> sources, size_t anchored, size_t max_bytes,
                  bool words, size_t max_candidates, std::vector<DraftCandidate>* out);

}  // namespace fgemma
