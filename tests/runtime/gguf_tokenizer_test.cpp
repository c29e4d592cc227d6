// The tokenizer read from a GGUF's metadata gives the golden ids, like tokenizer.json does.
#include <gtest/gtest.h>

#include "runtime/loaded_model.h"
#include "test_support.h"

namespace fgemma {
namespace {

TEST(GgufTokenizer, MatchesGoldenIdsAndTheJsonTokenizer) {
  auto from_gguf = LoadTokenizerFor(test::FixturePath("models/mini-q8_0.gguf"));
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().ToString();
  const Json rows = ReadJsonFile(test::FixturePath("tokenizer/golden-dev.json")).value();
  size_t matched = 0;
  for (const auto& row : rows) {
    const auto ids = from_gguf->Encode(row["text"].get<std::string>());
    EXPECT_EQ(Json(ids), row["ids"]) << row["text"];
    matched += Json(ids) == row["ids"];
  }
  EXPECT_EQ(matched, rows.size());
  EXPECT_EQ(from_gguf->vocab_size(), 262144);
  EXPECT_EQ(from_gguf->bos_id(), 2);
  EXPECT_TRUE(from_gguf->IsEos(1));
  EXPECT_TRUE(from_gguf->IsEos(106));
}

TEST(ModelFiles, TemplatesAreIdentifiedOrRefused) {
  auto t = LoadTemplateFor(test::FixturePath("models/mini-bf16"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->kind, TemplateKind::kOfficial);
  auto g = LoadTemplateFor(test::FixturePath("models/mini-q8_0.gguf"));  // ships none: official
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->kind, TemplateKind::kOfficial);
}

}  // namespace
}  // namespace fgemma
