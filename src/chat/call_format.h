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

// Rendered prompt text that remembers which bytes are the template's control tokens, so that the
// tokenizer matches control tokens there and nowhere else: append() is text (client content, or
// template text holding no control token), control() a control token the template writes.
class PromptOut {
 public:
  struct Span {
    size_t offset = 0, length = 0;
    bool operator==(const Span&) const = default;
  };
  PromptOut& append(std::string_view s) {
    text_.append(s);
    return *this;
  }
  PromptOut& append(size_t n, char c) {
    text_.append(n, c);
    return *this;
  }
  PromptOut& push_back(char c) {
    text_.push_back(c);
    return *this;
  }
  PromptOut& control(std::string_view token) {
    if (!token.empty()) controls_.push_back({text_.size(), token.size()});
    text_.append(token);
    return *this;
  }
  const std::string& text() const { return text_; }
  std::string& mutable_text() { return text_; }
  const std::vector<Span>& controls() const { return controls_; }

 private:
  std::string text_;
  std::vector<Span> controls_;
};

// Appends format_argument(value, escape_keys) to *out, exactly as the template renders it (the
// <escape> delimiters as the template's control tokens, strings and keys as text).
// `value` may be null (Undefined prints nothing). Fails only for nesting deeper than 64 levels.
Status AppendFormattedArgument(const OrderedJson* value, bool escape_keys, PromptOut* out);

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
