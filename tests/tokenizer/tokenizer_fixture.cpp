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

const Json& TokenizerJson() {
  static const Json* json = [] {
    auto j = ReadJsonFile(FixturePath("models/mini-bf16/tokenizer.json"));
    if (!j.ok()) {
      ADD_FAILURE() << j.status().ToString();
      std::abort();
    }
    return new Json(std::move(j).value());
  }();
  return *json;
}

VocabSpec GgufStyleVocab() {
  const Json& j = TokenizerJson();
  const Json& vocab = j["model"]["vocab"];
  VocabSpec spec;
  spec.tokens.resize(vocab.size());
  for (const auto& [text, id] : vocab.items()) spec.tokens[id.get<size_t>()] = text;
  spec.types.assign(spec.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    const std::string& t = spec.tokens[id];
    if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>') spec.types[id] = static_cast<int32_t>(TokenType::kByte);
  }
  for (const Json& added : j["added_tokens"]) {
    const auto id = added["id"].get<size_t>();
    if (id >= spec.tokens.size()) continue;
    spec.types[id] = static_cast<int32_t>(added["special"].get<bool>() ? TokenType::kControl : TokenType::kUserDefined);
  }
  // Scores as in FunctionGemma's GGUF (and the mini-*.gguf fixtures): -id for normal tokens, 0 for
  // control, user-defined and byte tokens.
  spec.scores.resize(spec.tokens.size());
  for (size_t id = 0; id < spec.tokens.size(); ++id)
    spec.scores[id] = spec.types[id] == static_cast<int32_t>(TokenType::kNormal) ? -static_cast<float>(id) : 0.0f;
  spec.bos_id = 2;
  spec.eos_ids = {1, 106};
  return spec;
}

}  // namespace fgemma::test
