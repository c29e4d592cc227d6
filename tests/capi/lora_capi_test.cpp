// LoRA adapters through the C API: lora_path / lora_scale of the session and caller params.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fgemma/fgemma.h"
#include "test_support.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace {

class CapiLora : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(fgemma_model_load(fgemma::test::FixturePath("models/mini-bf16").c_str(), fgemma_model_default_params(), &model_),
              FGEMMA_OK)
        << fgemma_last_error();
  }
  static void TearDownTestSuite() {
    fgemma_model_free(model_);
    model_ = nullptr;
  }
  static fgemma_model* model_;
};
fgemma_model* CapiLora::model_ = nullptr;

TEST_F(CapiLora, DefaultsHaveNoAdapter) {
  EXPECT_EQ(fgemma_session_default_params().lora_path, nullptr);
  EXPECT_FLOAT_EQ(fgemma_session_default_params().lora_scale, 1.0f);
  EXPECT_EQ(fgemma_caller_default_params().lora_path, nullptr);
  EXPECT_FLOAT_EQ(fgemma_caller_default_params().lora_scale, 1.0f);
}

TEST_F(CapiLora, SessionLogitsMatchTheMergedReference) {
  const fgemma::Json golden = fgemma::ReadJsonFile(fgemma::test::FixturePath("lora/golden-mini-bf16-lora-s14.json")).value();
  std::vector<int32_t> tokens;
  for (auto& t : golden["tokens"]) tokens.push_back(t.get<int32_t>());
  const std::string lora = fgemma::test::FixturePath("lora/mini-lora-s14");
  fgemma_session_params p = fgemma_session_default_params();
  p.n_ctx = 128;
  p.n_threads = 2;
  p.lora_path = lora.c_str();
  fgemma_session* s = nullptr;
  ASSERT_EQ(fgemma_session_new(model_, p, &s), FGEMMA_OK) << fgemma_last_error();
  // Position 16 of the golden (positions[4]): evaluate up to it and compare its top-10.
  const size_t pos = golden["positions"][4].get<size_t>();
  std::vector<float> logits(static_cast<size_t>(fgemma_model_vocab_size(model_)));
  int32_t argmax = -1;
  ASSERT_EQ(fgemma_session_eval(s, tokens.data(), pos + 1, logits.data(), logits.size(), &argmax), FGEMMA_OK);
  for (const auto& e : golden["top10"][4]) EXPECT_NEAR(logits[e[0].get<size_t>()], e[1].get<double>(), 2e-3);
  EXPECT_EQ(argmax, golden["top10"][4][0][0].get<int32_t>());
  fgemma_session_free(s);
}

TEST_F(CapiLora, BadAdaptersGiveTheirStatus) {
  fgemma_session_params p = fgemma_session_default_params();
  p.n_ctx = 64;
  p.lora_path = "/nonexistent/adapter";
  fgemma_session* s = nullptr;
  EXPECT_EQ(fgemma_session_new(model_, p, &s), FGEMMA_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fgemma_last_error()).find("/nonexistent/adapter"), std::string::npos);
  EXPECT_EQ(s, nullptr);

  // A DoRA config beside real weights.
  const std::string dir = fgemma::test::TempDir() + "/dora";
  std::filesystem::create_directories(dir);
  const std::string src = fgemma::test::FixturePath("lora/mini-lora-s14");
  std::filesystem::copy_file(src + "/adapter_model.safetensors", dir + "/adapter_model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  fgemma::Json config = fgemma::ReadJsonFile(src + "/adapter_config.json").value();
  config["use_dora"] = true;
  ASSERT_TRUE(fgemma::WriteStringToFile(dir + "/adapter_config.json", config.dump()).ok());
  fgemma_caller_params cp = fgemma_caller_default_params();
  cp.n_ctx = 64;
  cp.lora_path = dir.c_str();
  fgemma_caller* c = nullptr;
  EXPECT_EQ(fgemma_caller_new(model_, cp, &c), FGEMMA_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(fgemma_last_error()).find("use_dora"), std::string::npos) << fgemma_last_error();
  EXPECT_EQ(c, nullptr);

  // An adapter for another base (tiny-gqa) on mini.
  cp.lora_path = nullptr;
  const std::string tiny = fgemma::test::FixturePath("lora/tiny-gqa-lora-s11");
  cp.lora_path = tiny.c_str();
  EXPECT_EQ(fgemma_caller_new(model_, cp, &c), FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fgemma_last_error()).find("has shape"), std::string::npos) << fgemma_last_error();
}

}  // namespace
