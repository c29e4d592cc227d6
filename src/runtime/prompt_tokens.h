// Token ids of a rendered prompt with control tokens only where the chat template wrote them
// (issue 16: content is text, structure is the template's).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "chat/call_format.h"
#include "tokenizer/tokenizer.h"

namespace fgemma {

// `text` cut into content and the template's control tokens (`controls`, in order, within text).
std::vector<TextSegment> PromptSegments(std::string_view text, std::span<const PromptOut::Span> controls);

// Token ids of rendered prompt text. Control tokens come only from `controls`: "<end_of_turn>" typed
// in a message, a tool name, a description, an enum value or an argument is the ordinary text
// "<end_of_turn>". With trust_content_tokens, the plain Hugging Face behaviour: the whole text is
// encoded with control-token recognition on. Both give the same ids when the content holds no
// control-token text (Tokenizer::EncodeSegments keeps BPE running across segment boundaries).
std::vector<int32_t> EncodePromptText(const Tokenizer& tokenizer, std::string_view text,
                                      std::span<const PromptOut::Span> controls, bool trust_content_tokens);

}  // namespace fgemma
