#include "runtime/prompt_tokens.h"

namespace fgemma {

std::vector<TextSegment> PromptSegments(std::string_view text, std::span<const PromptOut::Span> controls) {
  std::vector<TextSegment> segments;
  segments.reserve(2 * controls.size() + 1);
  size_t at = 0;
  for (const PromptOut::Span& c : controls) {
    if (c.offset > at) segments.push_back({text.substr(at, c.offset - at), true});
    segments.push_back({text.substr(c.offset, c.length), false});
    at = c.offset + c.length;
  }
  if (at < text.size()) segments.push_back({text.substr(at), true});
  return segments;
}

std::vector<int32_t> EncodePromptText(const Tokenizer& tokenizer, std::string_view text,
                                      std::span<const PromptOut::Span> controls, bool trust_content_tokens) {
  if (trust_content_tokens) return tokenizer.Encode(text);
  const std::vector<TextSegment> segments = PromptSegments(text, controls);
  return tokenizer.EncodeSegments(segments);
}

}  // namespace fgemma
