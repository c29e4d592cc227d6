// Python string semantics that FunctionGemma's chat template depends on when Hugging Face renders it
// with jinja2: `| trim` is str.strip(), dictsort compares str.lower() keys, `{{ x }}` of a float is
// repr(float). The native renderer and the call formatter must reproduce them byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fgemma::py {

// repr(float) of CPython 3: shortest round-trip digits, ".0" on integral values, exponent form
// ("1e-05", "1.5e+16") when the decimal exponent is < -4 or >= 16; "inf", "-inf", "nan".
std::string FloatRepr(double value);

// str.isspace() for one code point (Unicode whitespace: \t..\r, \x1c..\x1f, space, \x85, \xa0, ...).
bool IsSpace(char32_t cp);
// str.strip(): removes leading and trailing Unicode whitespace. `text` must be UTF-8.
std::string Strip(std::string_view text);
// str.lower(): full Unicode lowercase (table generated from CPython's), including U+0130 -> "i\u0307".
std::string Lower(std::string_view text);

// The code points of a UTF-8 string as substrings, which is how jinja2 iterates a Python str.
// Invalid bytes are returned one by one (JSON-parsed strings are always valid UTF-8).
std::vector<std::string_view> CodePoints(std::string_view text);

// Decodes one code point at text[*pos], advancing *pos; invalid bytes decode as themselves.
char32_t DecodeUtf8(std::string_view text, size_t* pos);
void AppendUtf8(char32_t cp, std::string* out);

}  // namespace fgemma::py
