// Where speculative drafts come from (prompt lookup): the text a call is likely to write next is
// text it has seen. Argument values are mostly copied from the user's utterance ("kitchen", "40"),
// and an app sends similar commands again, so earlier outputs on the same catalog predict names,
// keys and values. The lookup finds the longest suffix of what has been written that occurs in a
// source and proposes the text that follows it there. A proposal is only a guess: verification
// keeps exactly the tokens the model would have chosen, so a bad guess costs positions, not bits.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace fgemma {

// The continuation (at most max_bytes) after the best match of `written` in `sources`, or "".
// The first `anchored` sources are earlier outputs: one that begins with the whole of `written`
// (also when nothing is written yet) is the best match there is. Otherwise the longest suffix of
// `written` found in any source wins (at least one byte; ties: the earlier source, then the
// earlier place).
std::string_view LookupDraft(std::string_view written, std::span<const std::string> sources, size_t anchored,
                             size_t max_bytes);

}  // namespace fgemma
