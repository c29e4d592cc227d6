// Loads a Hugging Face tokenizer.json (BPE model with byte fallback, as Gemma 3 ships it).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer_model.h"
#include "util/status.h"

namespace fgemma::tokenizer_internal {

// Parses tokenizer.json text; `what` names it in errors. The pipeline sections must describe what the
// encoder implements (see hf_loader.cpp), anything else is kUnsupported naming the field. Does not
// call FinishModel and leaves eos_ids empty.
Result<std::unique_ptr<TokenizerModel>> ParseTokenizerJson(std::string_view text, const std::string& what);

}  // namespace fgemma::tokenizer_internal
