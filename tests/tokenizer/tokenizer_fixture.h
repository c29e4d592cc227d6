// The FunctionGemma tokenizer and golden rows, loaded once per test binary.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/json.h"

namespace fgemma::test {

struct GoldenRow {
  std::string text;
  std::vector<int32_t> ids;
};

// models/mini-bf16 (FunctionGemma's tokenizer.json); fails the test if it cannot be loaded.
const Tokenizer& FunctionGemmaTokenizer();
const std::vector<GoldenRow>& GoldenRows();
// The same tokenizer.json parsed independently (nlohmann), for checks that must not trust the loader.
const Json& TokenizerJson();
// Its vocabulary as a GGUF file lays it out: types from added tokens and byte tokens; scores -id
// for normal tokens and 0 for the others.
VocabSpec GgufStyleVocab();

}  // namespace fgemma::test
