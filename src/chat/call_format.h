// FunctionGemma's value syntax, as the official template's format_argument macro writes it and as
// the model emits it: strings as <escape>text<escape>, numbers as Python prints them, true/false,
// None, [a,b], {key:value} with keys sorted case-insensitively. The renderer uses it for tool calls
// and responses in the history; the constrained decoder and the tests use FormatCall to write a
// call exactly as the model would.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_json.h"
#include "util/json.h"
#include "util/status.h"

namespace fgemma {

inline constexpr std::string_view kEscape = "<escape>";
inline constexpr std::string_view kStartFunctionCall = "<start_function_call>";
inline constexpr std::string_view kEndFunctionCall = "<end_function_call>";
inline constexpr std::string_view kStartFunctionResponse = "<start_function_response>";
inline constexpr std::string_view kEndFunctionResponse = "<end_function_response>";
inline constexpr std::string_view kStartOfTurn = "<start_of_turn>";
inline constexpr std::string_view kEndOfTurn = "<end_of_turn>";

// Appends format_argument(value, escape_keys) to *out, exactly as the template renders it.
// `value` may be null (Undefined prints nothing). Fails only for nesting deeper than 64 levels.
Status AppendFormattedArgument(const OrderedJson* value, bool escape_keys, std::string* out);

// "<start_function_call>call:NAME{k:v,...}<end_function_call>", byte-identical to the template's
// rendering of an assistant tool call whose arguments are `arguments` (a JSON object). Fails when
// the text could not be parsed back unambiguously: a string containing "<escape>", a key that is
// empty or contains one of `:,{}[]<>` or whitespace, a non-finite number, or a bad function name.
Result<std::string> FormatCall(std::string_view name, const Json& arguments);
// Only the arguments part, "{k:v,...}" (keys unescaped, as in calls).
Result<std::string> FormatCallArguments(const Json& arguments);

// A name (function or parameter) that survives the call syntax: non-empty, and none of `:,{}[]<>`
// nor ASCII whitespace or control characters.
bool IsPlainName(std::string_view name);

}  // namespace fgemma
