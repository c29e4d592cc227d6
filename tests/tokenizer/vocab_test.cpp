// Tokenizer::FromVocab (GGUF-style arrays, merges implied by scores) against the merges of
// tokenizer.json: both must give the reference ids.
#include <gtest/gtest.h>

#include "tokenizer_fixture.h"

namespace fgemma::test {
namespace {

const Tokenizer& VocabTokenizer() {
  static const Tokenizer* t = [] {
    auto r = Tokenizer::FromVocab(GgufStyleVocab());
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      std::abort();
    }
    return new Tokenizer(std::move(r).value());
  }();
  return *t;
}

TEST(TokenizerVocab, SameIdsAsMergesPathOnEveryGoldenRow) {
  const Tokenizer& from_vocab = VocabTokenizer();
  const Tokenizer& from_json = FunctionGemmaTokenizer();
  int mismatches = 0;
  for (const auto& row : GoldenRows()) {
    const auto ids = from_vocab.Encode(row.text);
    EXPECT_EQ(ids, from_json.Encode(row.text));
    if (ids != row.ids && ++mismatches <= 5) ADD_FAILURE() << ::testing::PrintToString(row.text);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerVocab, SameMetadataAsTokenizerJson) {
  const Tokenizer& v = VocabTokenizer();
  const Tokenizer& j = FunctionGemmaTokenizer();
  EXPECT_EQ(v.vocab_size(), j.vocab_size());
  EXPECT_EQ(v.bos_id(), j.bos_id());
  EXPECT_EQ(v.eos_ids(), j.eos_ids());
  for (int32_t id : {0, 1, 2, 3, 46, 48, 52, 105, 106, 107, 138, 238, 255999}) {
    EXPECT_EQ(v.IsSpecial(id), j.IsSpecial(id)) << id;
    EXPECT_EQ(v.TokenText(id), j.TokenText(id)) << id;
  }
}

TEST(TokenizerVocab, UntrustedTextAgrees) {
  const Tokenizer& v = VocabTokenizer();
  const Tokenizer& j = FunctionGemmaTokenizer();
  const std::string text = "<start_of_turn>user\n<start_function_call>call:x{a:<escape>1<escape>}<end_function_call>";
  EXPECT_EQ(v.Encode(text, {.parse_special = false}), j.Encode(text, {.parse_special = false}));
  EXPECT_EQ(v.Encode(text), j.Encode(text));
}

TEST(TokenizerVocab, RejectsInconsistentArrays) {
  VocabSpec spec;
  spec.tokens = {"a", "b"};
  spec.scores = {0};
  spec.types = {1, 1};
  auto r = Tokenizer::FromVocab(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("1 scores for 2 tokens"), std::string::npos) << r.status().message();

  spec.scores = {0, 0};
  spec.types = {1, 9};
  r = Tokenizer::FromVocab(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token_type[1] = 9"), std::string::npos) << r.status().message();

  spec.types = {1, 1};  // no byte tokens: some text would have no encoding
  r = Tokenizer::FromVocab(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("<0x00>"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace fgemma::test
