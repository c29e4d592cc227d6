// What an utterance says, as the draft guesser (call_generator_guess.cpp) reads it: its words and
// numbers, whether it says a value as a whole word, where a copied stretch of it likely ends.
// Plain text functions: no grammar, no tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fgemma {

// A letter or a digit (ASCII): what words are made of.
bool WordByte(char c);
std::string Lower(std::string_view s);
// Lowercase alphanumeric runs of `s`.
std::vector<std::string> Words(std::string_view s);
// The numbers of `text` ("22.5", "40", "20" of "20%"; not a part of a word: none in "mp3"), in order.
std::vector<std::string_view> Numbers(std::string_view text);

// Where the first occurrence of `value` in `text` as a whole (no letter or digit joined to it on
// either side), case ignored, ends; npos when there is none. SaysValue: whether there is one.
// "40" in "to 40 percent", not in "140"; "heat" in "Heat the living room".
size_t FindValue(std::string_view text, std::string_view value);
bool SaysValue(std::string_view text, std::string_view value);

// The digits of a number being written ("volume:30" gives "30"), empty when `hyp` is not inside one.
std::string_view NumberSoFar(std::string_view hyp);

// A word of the utterance names a part of a function name: equal, or one a prefix of the other
// when both have 4 letters or more ("light" for "lights", "playlist" for "play").
bool Names(const std::string& word, const std::string& part);

// Where a string value copied from the utterance likely ends: before a word that begins one of
// `enum_values` (lowercase: another argument's value, "jazz| in the living room"), and before the
// short words (3 letters or fewer: "in the", "at") just in front of it; npos when no such word
// follows. `cont` may start inside a word: only later words count.
size_t TextEnd(std::string_view cont, const std::vector<std::string>& enum_values);

// `form` (an earlier call's string value: "2026-06-27T17:45:00") with its digit runs replaced, in
// order, by the digit runs of `text` (the utterance: "on 2026-10-26 at 12:45"), each padded with
// leading zeros to the length of the run it replaces ("6:30" gives "06"), into *out. The form's
// runs after the text's last are kept only when all zeros (the seconds a time leaves unsaid). False
// when there is nothing to fill (no run in either), a run of `text` is longer than its place, or
// a run left unfilled is not zeros. *out is reused (no allocation once it has grown).
bool FillDigits(std::string_view form, std::string_view text, std::string* out);

}  // namespace fgemma
