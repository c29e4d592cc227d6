// UTF-8 helpers shared by the encoder (splitting text into characters) and the decoders (holding back
// an unfinished character). The tokenizer accepts arbitrary bytes, so every helper defines what it does
// with malformed input instead of assuming valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fgemma::tokenizer_internal {

// "▁" (U+2581): how SentencePiece vocabularies spell a space.
inline constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";
inline constexpr char32_t kSpaceMarkerCp = 0x2581;

// Appends the UTF-8 encoding of code point `cp` (at most U+10FFFF, not a surrogate).
void AppendUtf8(char32_t cp, std::string& out);

// Length of the well-formed UTF-8 character starting at s[pos] (1-4), or 0 when the bytes there are
// not one (stray continuation byte, overlong form, surrogate, > U+10FFFF, truncated sequence). The
// encoder treats each byte of a malformed sequence as its own symbol, which byte fallback then encodes.
size_t Utf8CharLength(std::string_view s, size_t pos);

// Code point of the well-formed character of `len` bytes (from Utf8CharLength) at s[pos].
char32_t Utf8Decode(std::string_view s, size_t pos, size_t len);

// Number of trailing bytes of `s` that form the start of a well-formed character still missing its
// last byte(s): 0 if `s` ends on a character boundary or with bytes that can never become valid.
// The streaming decoder holds exactly these bytes back.
size_t Utf8IncompleteSuffix(std::string_view s);

}  // namespace fgemma::tokenizer_internal
