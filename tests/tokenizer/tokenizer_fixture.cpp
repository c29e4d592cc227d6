#include "tokenizer_fixture.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "test_support.h"

namespace fgemma::test {

const Tokenizer& FunctionGemmaTokenizer() {
  static const Tokenizer* tokenizer = [] {
    auto t = Tokenizer::FromFile(FixturePath("models/mini-bf16"));
    if (!t.ok()) {
      ADD_FAILURE() << t.status().ToString();
      std::abort();  // every caller needs the tokenizer; nothing useful can run without it
    }
    return new Tokenizer(std::move(t).value());
  }();
  return *tokenizer;
}

const std::vector<GoldenRow>& GoldenRows() {
  static const std::vector<GoldenRow>* rows = [] {
    auto* out = new std::vector<GoldenRow>();
    auto j = ReadJsonFile(FixturePath("tokenizer/golden-dev.json"));
    if (!j.ok()) {
      ADD_FAILURE() << j.status().ToString();
      return out;
    }
    for (const Json& row : *j) out->push_back({row["text"].get<std::string>(), row["ids"].get<std::vector<int32_t>>()});
    return out;
  }();
  return *rows;
}

}  // namespace fgemma::test
