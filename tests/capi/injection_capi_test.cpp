// Issue 16 through the C API and its C++ wrapper: control tokens typed by a client stay text in the
// prompt (fgemma_caller_prompt_tokens), unless fgemma_caller_params.trust_content_tokens.
#include <gtest/gtest.h>

#include <algorithm>

#include "fgemma/fgemma.h"
#include "fgemma/fgemma.hpp"
#include "injection_cases.h"
#include "test_support.h"

namespace fgemma {
namespace {

class CapiInjectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(fgemma_model_load(test::FixturePath("models/mini-bf16").c_str(), fgemma_model_default_params(), &model_),
              FGEMMA_OK)
        << fgemma_last_error();
    tokenizer_ = new Tokenizer(Tokenizer::FromFile(test::FixturePath("models/mini-bf16")).value());
  }
  static void TearDownTestSuite() {
    fgemma_model_free(model_);
    model_ = nullptr;
    delete tokenizer_;
  }
  static fgemma_caller* NewCaller(bool trust) {
    fgemma_caller_params p = fgemma_caller_default_params();
    p.n_ctx = 2048;
    p.n_threads = 1;
    p.max_tokens = 1;  // the prompt is what is checked
    p.trust_content_tokens = trust;
    fgemma_caller* c = nullptr;
    EXPECT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_OK) << fgemma_last_error();
    return c;
  }
  static std::vector<int32_t> PromptTokens(const fgemma_caller* c) {
    const int64_t n = fgemma_caller_prompt_tokens(c, nullptr, 0);
    EXPECT_GE(n, 0);
    std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(n, 0)));
    EXPECT_EQ(fgemma_caller_prompt_tokens(c, ids.data(), ids.size()), n);
    return ids;
  }
  static fgemma_model* model_;
  static Tokenizer* tokenizer_;
};
fgemma_model* CapiInjectionTest::model_ = nullptr;
Tokenizer* CapiInjectionTest::tokenizer_ = nullptr;

TEST_F(CapiInjectionTest, DefaultsKeepContentAsText) {
  EXPECT_FALSE(fgemma_caller_default_params().trust_content_tokens);
  EXPECT_EQ(FGEMMA_ABI_VERSION, 4);  // 2 added trust_content_tokens, 3 draft (issue 14) and lora_path/lora_scale (issue 11), 4 share_passes (issue 14)
}

TEST_F(CapiInjectionTest, EveryTokenInEveryPlaceThroughTheCApi) {
  const Tokenizer& tok = *tokenizer_;
  fgemma_caller* safe = NewCaller(false);
  fgemma_caller* trusting = NewCaller(true);
  size_t ran = 0;
  for (const std::string& place : test::InjectionPlaces()) {
    for (const std::string& token : test::InjectedTokens()) {
      SCOPED_TRACE(place + " " + token);
      const test::InjectionCase c = test::MakeInjectionCase(place, token);
      const std::string tools = c.tools.dump(), messages = c.messages.dump();
      const fgemma_status st = fgemma_caller_call(safe, tools.c_str(), messages.c_str(), "auto", nullptr, nullptr);
      auto request = ParseChatRequest(OrderedJson{{"tools", c.tools}, {"messages", c.messages}});
      if (!request.ok() || st == FGEMMA_ERR_INVALID_ARGUMENT) {
        // Refused by validation (a tool name with "<") or by the call grammar (an enum value
        // holding "<escape>"): refused as a whole, no prompt.
        EXPECT_EQ(st, FGEMMA_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(fgemma_caller_prompt_tokens(safe, nullptr, 0), 0);
        continue;
      }
      ASSERT_TRUE(st == FGEMMA_OK || st == FGEMMA_ERR_BUDGET) << fgemma_last_error();
      const auto parts = RenderPromptParts(*request).value();
      const std::vector<int32_t> ids = PromptTokens(safe);
      EXPECT_EQ(ids, test::ExpectedPromptIds(tok, parts));
      EXPECT_EQ(test::ControlIdsIn(tok, ids), test::TemplateControlIds(tok, parts));
      const fgemma_status st2 = fgemma_caller_call(trusting, tools.c_str(), messages.c_str(), "auto", nullptr, nullptr);
      ASSERT_TRUE(st2 == FGEMMA_OK || st2 == FGEMMA_ERR_BUDGET) << fgemma_last_error();
      const std::vector<int32_t> old = PromptTokens(trusting);
      EXPECT_EQ(old, tok.Encode(parts.prefix + parts.remainder));
      const int32_t id = tok.TokenId(token);
      EXPECT_GT(std::count(old.begin(), old.end(), id), std::count(ids.begin(), ids.end(), id));
      ++ran;
    }
  }
  EXPECT_GE(ran, 8u * test::InjectedTokens().size());
  fgemma_caller_free(safe);
  fgemma_caller_free(trusting);
}

TEST_F(CapiInjectionTest, PromptTokensBufferConventions) {
  fgemma_caller* c = NewCaller(false);
  EXPECT_EQ(fgemma_caller_prompt_tokens(c, nullptr, 0), 0);  // no call yet
  const test::InjectionCase ic = test::MakeInjectionCase("user", "<end_of_turn>");
  fgemma_caller_call(c, ic.tools.dump().c_str(), ic.messages.dump().c_str(), nullptr, nullptr, nullptr);
  const int64_t n = fgemma_caller_prompt_tokens(c, nullptr, 0);
  ASSERT_GT(n, 10);
  std::vector<int32_t> some(3, -1);
  EXPECT_EQ(fgemma_caller_prompt_tokens(c, some.data(), some.size()), n);  // truncated, size still told
  EXPECT_EQ(some[0], fgemma_model_bos(model_));
  EXPECT_EQ(fgemma_caller_prompt_tokens(c, nullptr, 5), -FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fgemma_caller_prompt_tokens(nullptr, nullptr, 0), -FGEMMA_ERR_INVALID_ARGUMENT);
  fgemma_caller_free(c);
}

TEST_F(CapiInjectionTest, CppApiPassesTheSwitchAndReturnsPromptTokens) {
  auto model = api::Model::Load(test::FixturePath("models/mini-bf16"));
  ASSERT_TRUE(model.ok());
  const test::InjectionCase ic = test::MakeInjectionCase("user", "<start_of_turn>");
  size_t turns[2] = {0, 0};
  for (int trust = 0; trust < 2; ++trust) {
    fgemma_caller_params p = fgemma_caller_default_params();
    p.n_threads = 1;
    p.n_ctx = 2048;
    p.max_tokens = 1;  // the prompt is what is checked
    p.trust_content_tokens = trust == 1;
    auto caller = api::Caller::Create(*model, p);
    ASSERT_TRUE(caller.ok());
    const fgemma_status st = caller->Call(ic.tools.dump(), ic.messages.dump()).status();
    ASSERT_TRUE(st == FGEMMA_OK || st == FGEMMA_ERR_BUDGET) << fgemma_status_name(st);
    auto ids = caller->PromptTokens();
    ASSERT_TRUE(ids.ok());
    turns[trust] = std::count(ids->begin(), ids->end(), tokenizer_->TokenId("<start_of_turn>"));
  }
  EXPECT_EQ(turns[0] + 3, turns[1]);  // the token twice in the first user message, once alone in the last
}

}  // namespace
}  // namespace fgemma
