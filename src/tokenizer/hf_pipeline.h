// The pipeline sections of a tokenizer.json (normalizer, pre_tokenizer, decoder): kUnsupported, naming
// the section and step, unless they describe SentencePiece-style BPE as this tokenizer implements it;
// kCorruptFile when a step's `type` is not a string ("normalizer.type: expected a string, got a number").
#pragma once

#include <string>

#include "util/json.h"
#include "util/status.h"

namespace fgemma::tokenizer_internal {

// Sets `prepend_space` when the normalizer prepends "▁" (older Gemma files).
Status CheckPipeline(const Json& normalizer, const Json& pre_tokenizer, const Json& decoder, const std::string& what,
                     bool& prepend_space);

}  // namespace fgemma::tokenizer_internal
