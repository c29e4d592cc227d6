// Issue #30 through the C API (what the Python and Java bindings pass on): numbers no run can
// honour are refused by fgemma_caller_new / fgemma_session_new naming the field, and a model freed
// before its callers and sessions lives until the last of them is freed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fgemma/fgemma.h"
#include "mini_model_capi_fixture.h"
#include "util/thread_pool.h"

namespace capi_limits_test {

const char* kMessages =
    R"([{"role":"developer","content":"You are a model that can do function calling with the following functions"},)"
    R"({"role":"user","content":"Turn on the kitchen lights"}])";

class CapiLimits : public fgemma::test::MiniModelCapiTest {
 protected:
  static fgemma_caller_params Params() {
    fgemma_caller_params p = fgemma_caller_default_params();
    p.n_ctx = 2048;
    p.n_threads = 1;
    return p;
  }
  static void ExpectRefused(fgemma_caller_params p, fgemma_status status, const std::string& words) {
    fgemma_caller* c = reinterpret_cast<fgemma_caller*>(1);
    EXPECT_EQ(fgemma_caller_new(model_, p, &c), status) << fgemma_last_error();
    EXPECT_EQ(c, nullptr);
    EXPECT_NE(std::string(fgemma_last_error()).find(words), std::string::npos) << fgemma_last_error();
  }
};

TEST_F(CapiLimits, CallerParamsNoRunCanHonourAreRefused) {
  const int pools = fgemma::ThreadPool::LivePools();
  fgemma_caller_params p = Params();
  for (int32_t threads : {2000, INT32_MAX}) {
    p.n_threads = threads;
    ExpectRefused(p, FGEMMA_ERR_OUT_OF_RANGE, "n_threads: " + std::to_string(threads) + " threads is outside 0");
  }
  p = Params();
  p.share_passes = true;  // the shared path makes its pool before the caller: refused before that too
  p.n_threads = 4096;
  ExpectRefused(p, FGEMMA_ERR_OUT_OF_RANGE, "n_threads");
  EXPECT_EQ(fgemma::ThreadPool::LivePools(), pools);

  p = Params();
  for (double ms : {std::nan(""), HUGE_VAL}) {
    p.time_budget_ms = ms;
    ExpectRefused(p, FGEMMA_ERR_INVALID_ARGUMENT, "time_budget_ms");
  }
  p.time_budget_ms = 1e15;
  ExpectRefused(p, FGEMMA_ERR_OUT_OF_RANGE, "time_budget_ms");
  p = Params();
  p.n_ctx = 0;
  ExpectRefused(p, FGEMMA_ERR_INVALID_ARGUMENT, "n_ctx is 0");
  p.n_ctx = 1u << 30;
  ExpectRefused(p, FGEMMA_ERR_INVALID_ARGUMENT, "max_position_embeddings");
  p = Params();
  p.lora_path = "/nonexistent-adapter";
  p.lora_scale = std::nanf("");
  ExpectRefused(p, FGEMMA_ERR_INVALID_ARGUMENT, "LoRA scale");
}

TEST_F(CapiLimits, SessionThreadsAreBounded) {
  fgemma_session_params p = fgemma_session_default_params();
  p.n_ctx = 64;
  p.n_threads = 100000;
  fgemma_session* s = nullptr;
  EXPECT_EQ(fgemma_session_new(model_, p, &s), FGEMMA_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(fgemma_last_error()).find("n_threads"), std::string::npos) << fgemma_last_error();
  EXPECT_EQ(s, nullptr);
}

// The budget limit itself works as a budget (a day: the call finishes).
TEST_F(CapiLimits, ADayLongBudgetIsAccepted) {
  fgemma_caller_params p = Params();
  p.time_budget_ms = 86'400'000.0;
  fgemma_caller* c = nullptr;
  ASSERT_EQ(fgemma_caller_new(model_, p, &c), FGEMMA_OK) << fgemma_last_error();
  EXPECT_EQ(fgemma_caller_call(c, tools_->c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_OK)
      << fgemma_last_error();
  fgemma_caller_free(c);
}

// At 3576020 fgemma_model_free deleted the model under its callers (their next call read freed
// memory); now each caller and session holds it.
TEST(CapiModelLifetime, ModelFreedFirstLivesUntilItsLastCallerAndSession) {
  fgemma_model* model = nullptr;
  ASSERT_EQ(fgemma_model_load(fgemma::test::FixturePath("models/mini-bf16").c_str(), fgemma_model_default_params(), &model),
            FGEMMA_OK);
  const std::string tools = fgemma::ReadFileToString(fgemma::test::FixturePath("chat/smart-home-tools.json")).value();
  fgemma_caller_params cp = fgemma_caller_default_params();
  cp.n_ctx = 2048;
  cp.n_threads = 1;
  fgemma_caller* caller = nullptr;
  ASSERT_EQ(fgemma_caller_new(model, cp, &caller), FGEMMA_OK);
  fgemma_session_params sp = fgemma_session_default_params();
  sp.n_ctx = 64;
  sp.n_threads = 1;
  fgemma_session* session = nullptr;
  ASSERT_EQ(fgemma_session_new(model, sp, &session), FGEMMA_OK);

  fgemma_model_free(model);
  EXPECT_EQ(fgemma_model_vocab_size(model), -1);  // the handle itself is dead (memory still held)
  ASSERT_EQ(fgemma_caller_call(caller, tools.c_str(), kMessages, "required", nullptr, nullptr), FGEMMA_OK)
      << fgemma_last_error();
  char result[4096];
  EXPECT_GT(fgemma_caller_result_json(caller, result, sizeof(result)), 0);
  EXPECT_NE(std::string(result).find("\"calls\""), std::string::npos) << result;
  fgemma_caller_free(caller);
  const int32_t prompt[] = {2, 105};
  int32_t argmax = -1;
  EXPECT_EQ(fgemma_session_eval(session, prompt, 2, nullptr, 0, &argmax), FGEMMA_OK) << fgemma_last_error();
  EXPECT_GE(argmax, 0);
  fgemma_session_free(session);  // the model's memory goes here (ASan: no leak, no use after free)
}

}  // namespace capi_limits_test
