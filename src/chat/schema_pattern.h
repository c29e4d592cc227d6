// The regular-expression subset a string parameter's `pattern` (or a known `format`) may use,
// compiled to a deterministic automaton over UTF-8 bytes: the call grammar steps it while decoding,
// the validator runs it on a parsed value, so both accept the same strings.
//
// Supported (ECMAScript syntax, JSON Schema's search semantics: unanchored unless ^ / $):
//   literals (any UTF-8 character), escapes \. \\ \/ \- \^ \$ \| \? \* \+ \( \) \[ \] \{ \} \n \r
//   \t \f \v \xHH \uHHHH, classes \d \D \w \W \s \S (ASCII meanings), '.', [..] and [^..] with
//   ASCII members and ranges, groups (..) and (?:..), alternation |, repetition * + ? {n} {n,}
//   {n,m} (bounds up to 100; a trailing ? for laziness changes nothing a whole match cares about),
//   ^ only first and $ only last.
// Refused, with the reason: back-references, lookaround, named groups, \b \B \p, non-ASCII class
// members, anchors elsewhere, ^/$ beside a top-level |, and automata over kMaxPatternStates states.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace fgemma {

inline constexpr size_t kMaxPatternStates = 512;

struct PatternDfa {
  static constexpr uint16_t kDead = 0xFFFF;
  static constexpr uint32_t kUnreachable = 0xFFFFFFFF;
  std::vector<std::array<uint16_t, 256>> next;  // per state, per byte: next state or kDead
  std::vector<uint8_t> accepting;
  std::vector<uint32_t> to_accept;              // fewest bytes to an accepting state
  uint16_t start = 0;

  bool Matches(std::string_view text) const;
};

// For a pattern beside minLength / maxLength: per state q (at a character boundary) and count k of
// characters still to come (0..max_chars), the fewest bytes of valid UTF-8 that take q to an
// accepting state in exactly k characters, or kNoLength; laid out [q * (max_chars + 1) + k]. With
// it the grammar admits a byte iff some completion matches and meets both bounds within the bytes
// left: the product of the automaton with a character counter, without building it.
inline constexpr uint16_t kNoLength = 0xFFFF;
std::vector<uint16_t> PatternLengthTable(const PatternDfa& dfa, uint32_t max_chars);
// The boundary states reached by finishing the character in progress from `state`, with `need`
// continuation bytes to come, the next in [lo, hi] (each set once in `out`, a state per entry).
// Returns how many were written to `out` (room for kMaxPatternStates); allocates nothing.
size_t FinishCharacter(const PatternDfa& dfa, uint16_t state, int need, uint8_t lo, uint8_t hi, uint16_t* out);

// `path` names the keyword in errors ("tools[0]...properties.zip.pattern: ...").
Result<std::shared_ptr<const PatternDfa>> CompilePattern(std::string_view pattern, const std::string& path);

// The pattern standing for a string `format` this engine checks (date, time, date-time, uuid,
// email), or "" when it has none.
std::string_view FormatPattern(std::string_view format);

}  // namespace fgemma
