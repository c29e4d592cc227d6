// A GGUF vocabulary with one very long token (issue #30, finding 6): deriving the merges from the
// token list used to look up both halves of every split, a token's length squared in hashing (120k
// characters: 11.7 s; 2 MB: about an hour, past the CTest timeout). Now the work is linear in the
// vocabulary's bytes: the load below reads each byte a few times (merge_build_bytes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/gguf_writer.h"
#include "runtime/loaded_model.h"
#include "test_support.h"
#include "tokenizer/tokenizer_model.h"

namespace fgemma::gguf_long_token_test {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kByte = 6;

// <pad> <eos> <bos>, the 256 byte tokens, then `normal` (higher scores first).
std::string WriteVocabGguf(const std::vector<std::string>& normal) {
  std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>"};
  std::vector<int32_t> types = {kControl, kControl, kControl};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.emplace_back(name);
    types.push_back(kByte);
  }
  for (const std::string& t : normal) {
    tokens.push_back(t);
    types.push_back(kNormal);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = types[i] == kNormal ? -static_cast<float>(i) : 0.0f;

  const std::string path = test::TempDir() + "/long-token.gguf";
  auto writer = GgufWriter::Create(path);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  namespace k = gguf_key;
  EXPECT_TRUE(writer->AddString(k::kTokenizerModel.name, "llama").ok());
  EXPECT_TRUE(writer->AddStringArray(k::kTokens.name, tokens).ok());
  EXPECT_TRUE(writer->AddF32Array(k::kScores.name, scores).ok());
  EXPECT_TRUE(writer->AddI32Array(k::kTokenType.name, types).ok());
  EXPECT_TRUE(writer->AddU32(k::kBosTokenId.name, 2).ok());
  EXPECT_TRUE(writer->AddU32(k::kEosTokenId.name, 1).ok());
  const Status finished = writer->Finish();
  EXPECT_TRUE(finished.ok()) << finished.ToString();
  return path;
}

TEST(GgufLongToken, TwoMegabyteTokenLoadsInWorkLinearInTheVocabulary) {
  std::string long_token;
  for (int i = 0; i < 1'000'000; ++i) long_token += "ab";  // every prefix "a", "ab", "aba"... is looked at
  auto tokenizer = LoadTokenizerFor(WriteVocabGguf({"a", "b", "ab", "abab", long_token}));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  const auto& model = tokenizer->model();
  // The old builder read ~L^2/2 = 2e12 bytes here; the new one stays within a few passes.
  EXPECT_LE(model.merge_build_bytes, 4 * model.texts.size()) << model.merge_build_bytes;

  // The merges are still every split into two usable tokens.
  const int32_t abab = tokenizer->TokenId("abab");
  ASSERT_GE(abab, 0);
  EXPECT_EQ(tokenizer->Encode("abab"), std::vector<int32_t>{abab});
  EXPECT_EQ(tokenizer->Encode("ab"), std::vector<int32_t>{tokenizer->TokenId("ab")});
}

TEST(GgufLongToken, LongTokensStillMergeFromTheirHalves) {
  // "c", "cc", "cccc", ... 4096 c's: each token is the one before it twice, so encoding 4096 c's
  // must climb every merge to one token.
  std::vector<std::string> doubling = {"c"};
  while (doubling.back().size() < 4096) doubling.push_back(doubling.back() + doubling.back());
  auto tokenizer = LoadTokenizerFor(WriteVocabGguf(doubling));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  const int32_t longest = tokenizer->TokenId(doubling.back());
  ASSERT_GE(longest, 0);
  EXPECT_EQ(tokenizer->Encode(doubling.back()), std::vector<int32_t>{longest});
  EXPECT_EQ(tokenizer->Encode(doubling.back() + "c"), (std::vector<int32_t>{longest, tokenizer->TokenId("c")}));
  EXPECT_LE(tokenizer->model().merge_build_bytes, 4 * tokenizer->model().texts.size());
}

}  // namespace
}  // namespace fgemma::gguf_long_token_test
