// The FunctionGemma tokenizer and golden rows, loaded once per test binary.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace fgemma::test {

struct GoldenRow {
  std::string text;
  std::vector<int32_t> ids;
};

// models/mini-bf16 (FunctionGemma's tokenizer.json); fails the test if it cannot be loaded.
const Tokenizer& FunctionGemmaTokenizer();
const std::vector<GoldenRow>& GoldenRows();

}  // namespace fgemma::test
