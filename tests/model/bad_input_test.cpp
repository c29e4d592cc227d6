// Bad input never crashes and always names the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "runtime/session.h"
#include "test_support.h"
#include "util/ids.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

namespace fs = std::filesystem;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::TempDir();
    const std::string src = test::FixturePath("models/tiny-mqa-f32");
    fs::copy_file(src + "/config.json", dir_ + "/config.json");
    auto bytes = ReadFileToString(src + "/model.safetensors");
    ASSERT_TRUE(bytes.ok());
    original_ = bytes.value();
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(original_[static_cast<size_t>(i)]);
    header_ = Json::parse(original_.substr(8, n));
    data_ = original_.substr(8 + n);
  }

  void WriteWeights(const std::string& bytes) { ASSERT_TRUE(WriteStringToFile(dir_ + "/model.safetensors", bytes).ok()); }

  // Writes model.safetensors with `header` and the original data section.
  void WriteHeader(const Json& header, const std::string& data) {
    const std::string text = header.dump();
    std::string out(8, '\0');
    const uint64_t length = text.size();  // 64-bit: a shift of a 32-bit size_t by 32 or more is undefined
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
    WriteWeights(out + text + data);
  }

  // Loads and expects an error of `code` whose message contains every one of `needles`.
  void ExpectLoadError(ErrorCode code, std::initializer_list<std::string> needles) {
    auto m = Model::Load(dir_);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), code) << m.status().ToString();
    for (const auto& n : needles) EXPECT_NE(m.status().message().find(n), std::string::npos) << m.status().ToString();
  }

  std::string dir_, original_, data_;
  Json header_;
};

TEST_F(BadInput, IntactCopyLoads) {
  WriteWeights(original_);
  EXPECT_TRUE(Model::Load(dir_).ok());
}

TEST_F(BadInput, TruncatedFile) {
  WriteWeights(original_.substr(0, original_.size() / 2));
  ExpectLoadError(ErrorCode::kCorruptFile, {"model.safetensors", "past the data section"});
  WriteWeights(original_.substr(0, 5));
  ExpectLoadError(ErrorCode::kCorruptFile, {"too short"});
  WriteWeights("");
  ExpectLoadError(ErrorCode::kCorruptFile, {"too short"});
}

TEST_F(BadInput, HeaderLengthPastTheEnd) {
  std::string bytes = original_;
  bytes[6] = 0x10;
  WriteWeights(bytes);
  ExpectLoadError(ErrorCode::kCorruptFile, {"header length", "past the end"});
}

TEST_F(BadInput, MalformedHeaderJson) {
  std::string bytes = original_;
  bytes[8] = 'x';
  WriteWeights(bytes);
  ExpectLoadError(ErrorCode::kCorruptFile, {"malformed JSON", "byte"});
}

TEST_F(BadInput, OffsetsOutOfBounds) {
  Json h = header_;
  h["model.norm.weight"]["data_offsets"][1] = data_.size() + 4;
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kCorruptFile, {"model.norm.weight", "past the data section"});
}

TEST_F(BadInput, OffsetsOverlap) {
  Json h = header_;
  h["model.layers.0.input_layernorm.weight"]["data_offsets"] = h["model.layers.0.post_attention_layernorm.weight"]["data_offsets"];
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kCorruptFile, {"overlap"});
}

TEST_F(BadInput, OffsetsDisagreeWithShape) {
  Json h = header_;
  h["model.norm.weight"]["shape"] = {63};
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kCorruptFile, {"model.norm.weight", "63"});
}

TEST_F(BadInput, UnsupportedDtype) {
  Json h = header_;
  h["model.norm.weight"]["dtype"] = "I64";
  h["model.norm.weight"]["shape"] = {32};
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kUnsupported, {"model.norm.weight", "I64"});
}

TEST_F(BadInput, WrongShape) {
  Json h = header_;
  h["model.layers.0.self_attn.q_proj.weight"]["shape"] = {64, 128};  // same bytes, transposed
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kInvalidArgument, {"q_proj", "[64, 128]", "[128, 64]"});
}

TEST_F(BadInput, MissingTensor) {
  Json h = header_;
  h.erase("model.layers.3.mlp.up_proj.weight");
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kNotFound, {"model.layers.3.mlp.up_proj.weight"});
}

TEST_F(BadInput, UnknownTensor) {
  Json h = header_;
  h["model.layers.99.mystery.weight"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
  WriteHeader(h, data_);
  ExpectLoadError(ErrorCode::kInvalidArgument, {"unknown tensor", "model.layers.99.mystery.weight"});
}

TEST_F(BadInput, ConfigMissingField) {
  WriteWeights(original_);
  auto cfg = ReadJsonFile(dir_ + "/config.json").value();
  cfg.erase("hidden_size");
  ASSERT_TRUE(WriteStringToFile(dir_ + "/config.json", cfg.dump()).ok());
  ExpectLoadError(ErrorCode::kInvalidArgument, {"config.json", "hidden_size"});
}

TEST_F(BadInput, ConfigWrongType) {
  WriteWeights(original_);
  auto cfg = ReadJsonFile(dir_ + "/config.json").value();
  cfg["num_attention_heads"] = "four";
  ASSERT_TRUE(WriteStringToFile(dir_ + "/config.json", cfg.dump()).ok());
  ExpectLoadError(ErrorCode::kInvalidArgument, {"num_attention_heads", "integer"});
}

TEST_F(BadInput, MalformedConfigJson) {
  WriteWeights(original_);
  ASSERT_TRUE(WriteStringToFile(dir_ + "/config.json", "{\"model_type\": \"gemma3_text\", ").ok());
  ExpectLoadError(ErrorCode::kInvalidArgument, {"config.json", "malformed JSON"});
}

TEST_F(BadInput, UnsupportedArchitecture) {
  WriteWeights(original_);
  auto cfg = ReadJsonFile(dir_ + "/config.json").value();
  cfg["model_type"] = "llama";
  ASSERT_TRUE(WriteStringToFile(dir_ + "/config.json", cfg.dump()).ok());
  ExpectLoadError(ErrorCode::kUnsupported, {"llama"});
}

TEST_F(BadInput, MissingFiles) {
  auto m = Model::Load(dir_ + "/nope");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
  ExpectLoadError(ErrorCode::kNotFound, {"model.safetensors"});  // directory without weights
}

TEST_F(BadInput, ShardedIndexNamesMissingShard) {
  WriteWeights(original_);
  fs::rename(dir_ + "/model.safetensors", dir_ + "/model-00001-of-00001.safetensors");
  Json index = {{"weight_map", Json::object()}};
  for (auto it = header_.begin(); it != header_.end(); ++it) {
    if (it.key() != "__metadata__") index["weight_map"][it.key()] = "model-00001-of-00001.safetensors";
  }
  ASSERT_TRUE(WriteStringToFile(dir_ + "/model.safetensors.index.json", index.dump()).ok());
  ASSERT_TRUE(Model::Load(dir_).ok()) << Model::Load(dir_).status().ToString();
  index["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors";
  ASSERT_TRUE(WriteStringToFile(dir_ + "/model.safetensors.index.json", index.dump()).ok());
  ExpectLoadError(ErrorCode::kNotFound, {"model-00002-of-00002.safetensors"});
}

class BadRuntimeInput : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = std::shared_ptr<const Model>(Model::Load(test::FixturePath("models/tiny-mqa-bf16")).value());
    SessionOptions o;
    o.context = 16;
    o.threads = 1;
    session_ = Session::Create(model_, o).value();
  }
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Session> session_;
};

TEST_F(BadRuntimeInput, TokenIdOutOfRange) {
  std::vector<int32_t> ids = {1, 2, 512};
  Status st = session_->Evaluate(ids);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("512"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("index 2"), std::string::npos) << st.ToString();
  EXPECT_EQ(session_->position(), 0u);
  ids = {-1};
  EXPECT_FALSE(session_->Evaluate(ids).ok());
}

TEST_F(BadRuntimeInput, PromptLongerThanContext) {
  std::vector<int32_t> ids(17, 5);
  Status st = session_->Evaluate(ids);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("exceeds the context of 16"), std::string::npos) << st.ToString();
  std::vector<int32_t> ten(10, 5);
  ASSERT_TRUE(session_->Evaluate(ten).ok());
  EXPECT_EQ(session_->Evaluate(ten).code(), ErrorCode::kOutOfRange);  // 10 + 10 > 16
  EXPECT_EQ(session_->position(), 10u);
}

TEST_F(BadRuntimeInput, ContextBeyondModelLimitIsRefused) {
  SessionOptions o;
  o.context = 40000;
  auto s = Session::Create(model_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("max_position_embeddings"), std::string::npos);
}

TEST_F(BadRuntimeInput, HeadRequestOutsideBatch) {
  std::vector<int32_t> ids = {1, 2};
  HeadRequest h;
  h.index = 2;
  EXPECT_EQ(session_->Evaluate(ids, std::span<HeadRequest>(&h, 1)).code(), ErrorCode::kInvalidArgument);
}

TEST(IdsParsing, AcceptsBothFormsAndNamesBadBytes) {
  EXPECT_EQ(ParseIds(" 1 2\n3 ", "x").value(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ParseIds("[1, 2, 3]", "x").value(), (std::vector<int32_t>{1, 2, 3}));
  auto bad = ParseIds("1 2x 3", "ids.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ids.txt: expected a non-negative integer at byte 2"), std::string::npos);
  EXPECT_FALSE(ParseIds("[1, -2]", "x").ok());
  EXPECT_FALSE(ParseIds("[1, 2", "x").ok());
  EXPECT_FALSE(ParseIds("99999999999", "x").ok());
}

}  // namespace
}  // namespace fgemma
