// A tokenizer's vocabulary in the form llama.cpp's SentencePiece GGUF files store it
// (`tokenizer.ggml.model` "llama"): the inverse of Tokenizer::FromVocab.
#pragma once

#include <cstdint>

#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace fgemma {

struct GgufVocab {
  // tokens / scores / types per id, plus the tokenizer's bos_id, eos_ids and add_space_prefix.
  VocabSpec spec;
  int32_t unk_id = -1;  // tokenizer.json's model.unk_token; -1 when it has none
};

// Conventions (those of the FunctionGemma GGUF files; llama.cpp's tokenizer reads them back to the
// same ids): an added token marked special is CONTROL, any other added token USER_DEFINED, a
// "<0xNN>" token BYTE -- all three with score 0 -- and every other token NORMAL with score -id, so
// that the merge order follows the ids. A tokenizer shorter than the model's `vocab_size` is padded
// with UNUSED "[PAD<id>]" tokens (score -1000, as llama.cpp's converter pads); a longer one is an
// error, since ids past the embedding could not be looked up.
Result<GgufVocab> ExportGgufVocab(const Tokenizer& tokenizer, int32_t vocab_size);

}  // namespace fgemma
