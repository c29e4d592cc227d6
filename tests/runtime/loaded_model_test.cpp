// LoadModel: one loading path for every front end. A GGUF is parsed once and gives the model, the
// tokenizer and the template; a directory gives the same three; parts that do not belong together
// (vocabulary sizes) and templates fgemma cannot render exactly are refused with errors naming the file.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/gguf.h"
#include "runtime/loaded_model.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

TEST(LoadedModel, GgufIsParsedOnceAndGivesAllThreeParts) {
  const std::string path = test::FixturePath("models/mini-q8_0.gguf");
  const uint64_t before = GgufFile::ParseCount();
  auto loaded = LoadModel(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(GgufFile::ParseCount() - before, 1u) << "model, tokenizer and template must share one GgufFile";
  EXPECT_EQ(loaded->tokenizer.vocab_size(), loaded->model->config().vocab_size);
  EXPECT_EQ(loaded->tokenizer.vocab_size(), 262144);
  EXPECT_EQ(loaded->model->source(), path);
  // This file ships no chat template: the official one, said so.
  EXPECT_EQ(loaded->chat_template.kind, TemplateKind::kOfficial);
  EXPECT_EQ(loaded->chat_template.source.rfind("default", 0), 0u) << loaded->chat_template.source;
  // The same tokenizer as the one read alone.
  auto alone = LoadTokenizerFor(path);
  ASSERT_TRUE(alone.ok());
  const std::string text = "<start_of_turn>user\nTurn on the kitchen lights<end_of_turn>";
  EXPECT_EQ(loaded->tokenizer.Encode(text), alone->Encode(text));
}

TEST(LoadedModel, DirectoryGivesModelTokenizerAndIdentifiedTemplate) {
  const std::string dir = test::FixturePath("models/mini-bf16");
  const uint64_t before = GgufFile::ParseCount();
  auto loaded = LoadModel(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(GgufFile::ParseCount(), before);
  EXPECT_EQ(loaded->tokenizer.vocab_size(), loaded->model->config().vocab_size);
  EXPECT_EQ(loaded->chat_template.kind, TemplateKind::kOfficial);
  EXPECT_EQ(loaded->chat_template.source, dir + "/tokenizer_config.json");
}

TEST(LoadedModel, VocabularyMismatchIsRefusedNamingTheModel) {
  // tiny-mqa has a 512-token vocabulary; FunctionGemma's tokenizer has 262,144 tokens.
  const std::string dir = test::FixturePath("models/tiny-mqa-f32");
  LoadOptions o;
  o.tokenizer_path = test::FixturePath("models/mini-bf16/tokenizer.json");
  auto loaded = LoadModel(dir, o);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find(dir), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("tokenizer has 262144 tokens but the model's vocabulary is 512"), std::string::npos)
      << loaded.status().message();
  // Parts put together by hand are checked the same way.
  auto model = Model::Load(dir);
  ASSERT_TRUE(model.ok());
  auto tokenizer = Tokenizer::FromFile(o.tokenizer_path);
  ASSERT_TRUE(tokenizer.ok());
  auto parts = LoadedModel::FromParts(std::move(model).value(), std::move(tokenizer).value(), {}, "tiny-mqa");
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parts.status().message().rfind("tiny-mqa: tokenizer has", 0), 0u) << parts.status().message();
}

TEST(LoadedModel, UnknownTemplateIsRefusedNamingItsFile) {
  // mini-bf16's files, but a tokenizer_config.json whose chat template fgemma does not render.
  const std::string dir = test::TempDir() + "/odd-template";
  std::filesystem::create_directories(dir);
  const std::string src = test::FixturePath("models/mini-bf16");
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::create_symlink(src + "/" + f, dir + "/" + f);
  ASSERT_TRUE(WriteStringToFile(dir + "/tokenizer_config.json", R"({"chat_template": "{{ messages }}"})").ok());
  auto loaded = LoadModel(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kUnsupported) << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find(dir + "/tokenizer_config.json"), std::string::npos) << loaded.status().message();
}

TEST(LoadedModel, MissingPathIsNotFound) {
  auto loaded = LoadModel("/nonexistent/fgemma-model");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(loaded.status().message().find("/nonexistent/fgemma-model"), std::string::npos);
}

}  // namespace
}  // namespace fgemma
