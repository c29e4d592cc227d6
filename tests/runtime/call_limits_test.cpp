// FunctionCaller::Call enforces the request's limits itself: max_tokens (the generator's cap, also
// inside jump-forward runs), a deadline and a cancel flag, each reported as the outcome's
// finish_reason with what was generated until then.
#include <atomic>
#include <chrono>

#include "constrained_support.h"
#include "runtime/function_caller.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

class CallLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = LoadModel(test::FixturePath("models/mini-bf16"));
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    loaded_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete loaded_;
    loaded_ = nullptr;
  }
  std::unique_ptr<FunctionCaller> NewCaller(bool jump_forward = true) {
    FunctionCallerOptions o;
    o.threads = 2;
    o.context = 2048;
    o.decoding.jump_forward = jump_forward;
    auto c = FunctionCaller::Create(*loaded_, o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  CallRequest Request(ToolChoiceMode mode = ToolChoiceMode::kRequired) {
    OrderedJson tools =
        ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
    return CallRequest{test::MakeRequest(tools, "turn on the kitchen lights please"), ToolChoice{mode, ""}};
  }
  static LoadedModel* loaded_;
};
LoadedModel* CallLimitsTest::loaded_ = nullptr;

TEST_F(CallLimitsTest, UnlimitedCallsEndTheTurn) {
  auto caller = NewCaller();
  auto calls = caller->Call(Request(ToolChoiceMode::kRequired));
  ASSERT_TRUE(calls.ok()) << calls.status().ToString();
  EXPECT_EQ(calls->finish_reason, FinishReason::kToolCalls);
  EXPECT_FALSE(calls->parsed.calls.empty());
  auto text = caller->Call(Request(ToolChoiceMode::kNone));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->finish_reason, FinishReason::kStop);
  EXPECT_STREQ(FinishReasonName(FinishReason::kLength), "length");
}

TEST_F(CallLimitsTest, MaxTokensStopsWithLengthAndAPrefixOfTheFullAnswer) {
  auto caller = NewCaller();
  const auto full = caller->Call(Request()).value();
  ASSERT_GT(full.output_tokens.size(), 4u);
  for (bool jump_forward : {true, false}) {
    SCOPED_TRACE(jump_forward ? "jump-forward" : "one token per step");
    auto c = NewCaller(jump_forward);
    for (size_t limit : {size_t{1}, size_t{3}, full.output_tokens.size() - 1}) {
      CallRequest r = Request();
      r.limits.max_tokens = limit;
      size_t seen = 0;
      r.on_token = [&](int32_t) { return ++seen, true; };
      auto out = c->Call(r);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(out->finish_reason, FinishReason::kLength) << limit;
      EXPECT_EQ(out->output_tokens.size(), limit);
      EXPECT_EQ(out->timing.generated_tokens, limit);
      EXPECT_EQ(seen, limit);
      EXPECT_TRUE(std::equal(out->output_tokens.begin(), out->output_tokens.end(), full.output_tokens.begin()));
      EXPECT_FALSE(out->parsed.ok());
    }
    // Exactly enough is not a stop.
    CallRequest r = Request();
    r.limits.max_tokens = full.output_tokens.size();
    auto out = c->Call(r);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->finish_reason, FinishReason::kToolCalls);
    EXPECT_EQ(out->output_tokens, full.output_tokens);
  }
}

TEST_F(CallLimitsTest, ExpiredDeadlineStopsBeforeAnyWork) {
  auto caller = NewCaller();
  CallRequest r = Request();
  r.limits.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto out = caller->Call(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->finish_reason, FinishReason::kDeadline);
  EXPECT_TRUE(out->output_tokens.empty());
  EXPECT_EQ(out->timing.evaluated_tokens, 0u);
  // A deadline far away changes nothing.
  r.limits.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(caller->Call(r).value().finish_reason, FinishReason::kToolCalls);
}

TEST_F(CallLimitsTest, DeadlinePassingMidCallStopsAtTheNextToken) {
  auto caller = NewCaller();
  CallRequest r = Request();
  r.limits.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  size_t seen = 0;
  // The callback moves the clock past the deadline, as a slow call would.
  r.on_token = [&](int32_t) {
    if (++seen == 2) r.limits.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    return true;
  };
  auto out = caller->Call(r);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->finish_reason, FinishReason::kDeadline);
  EXPECT_EQ(out->output_tokens.size(), 2u);
}

TEST_F(CallLimitsTest, CancelFlagAndCallbackCancel) {
  auto caller = NewCaller();
  std::atomic<bool> cancel{true};
  CallRequest r = Request();
  r.limits.cancel = &cancel;
  auto before = caller->Call(r);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(before->output_tokens.empty());
  EXPECT_TRUE(cancel.load()) << "the caller reads the flag, never clears it";

  // Set from the callback (as another thread would): the next token is refused.
  cancel = false;
  size_t seen = 0;
  r.on_token = [&](int32_t) {
    if (++seen == 3) cancel = true;
    return true;
  };
  auto during = caller->Call(r);
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(during->output_tokens.size(), 3u);

  // The callback itself says stop.
  cancel = false;
  r.on_token = [](int32_t) { return false; };
  auto refused = caller->Call(r);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(refused->output_tokens.empty());
  EXPECT_FALSE(refused->parsed.ok());

  // And the caller still answers normally afterwards.
  r.on_token = nullptr;
  EXPECT_EQ(caller->Call(r).value().finish_reason, FinishReason::kToolCalls);
}

}  // namespace
}  // namespace fgemma
