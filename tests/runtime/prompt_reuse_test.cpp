// Prompt reuse (FunctionCallerOptions::reuse_prompt): a request keeps the positions its turn shares
// with the previous request's instead of evaluating them again, and gets the catalog state back by
// repairing the sliding rings (Session::RollBackTo). Both give the bits of evaluating from the
// catalog state, on the mini model whose 16-row rings the calls wrap and do not wrap.
#include <cstring>

#include "constrained_support.h"

namespace fgemma {
namespace {

std::vector<int32_t> Ids(size_t n, int32_t first, int32_t step) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = first + static_cast<int32_t>(i) * step;
  return ids;
}

// Rolling back to a position after the copied state equals evaluating only the kept tokens after
// it: each kept count, with the turn evaluated in one batch or one token at a time, and after a
// speculative batch. A turn that wrapped a ring cannot be rolled back and leaves the state alone.
TEST(PromptReuse, RollBackEqualsEvaluatingOnlyTheKeptTokens) {
  auto& w = test::ConstrainedWorld::Get();
  const std::vector<int32_t> prefix = Ids(40, 1000, 37), turn = Ids(12, 5000, 11), after = Ids(5, 20000, 17);
  auto catalog = w.NewSession();
  ASSERT_TRUE(catalog->Evaluate(prefix).ok());
  for (size_t keep : {size_t{0}, size_t{1}, size_t{5}, size_t{11}}) {
    auto reference = w.NewSession();
    ASSERT_TRUE(reference->CopyStateFrom(*catalog).ok());
    ASSERT_TRUE(reference->Evaluate(std::span<const int32_t>(turn).first(keep)).ok());
    const std::vector<float> want = test::LogitsOneAtATime(*reference, after);
    for (int how = 0; how < 3; ++how) {
      auto work = w.NewSession();
      ASSERT_TRUE(work->CopyStateFrom(*catalog).ok());
      if (how == 0) {
        ASSERT_TRUE(work->Evaluate(turn).ok());
      } else if (how == 1) {
        for (int32_t id : turn) ASSERT_TRUE(work->Evaluate(std::span<const int32_t>(&id, 1)).ok());
      } else {
        ASSERT_TRUE(work->EvaluateSpeculative(turn, {}, 4).ok());
      }
      // Then what a previous request left behind: more positions past the turn, still within a ring.
      ASSERT_TRUE(work->Evaluate(Ids(3, 7000, 5)).ok());
      ASSERT_TRUE(work->RollBackTo(prefix.size() + keep, *catalog).ok()) << "keep " << keep << " how " << how;
      EXPECT_EQ(work->position(), prefix.size() + keep);
      EXPECT_FALSE(work->Rewind(1).ok());  // the speculative batch's backup is gone with its positions
      const std::vector<float> got = test::LogitsOneAtATime(*work, after);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "keep " << keep << " how " << how;
    }
  }

  auto wrapped = w.NewSession();
  ASSERT_TRUE(wrapped->CopyStateFrom(*catalog).ok());
  ASSERT_TRUE(wrapped->Evaluate(Ids(17, 5000, 11)).ok());  // 17 positions: past the 16-row ring
  const Status st = wrapped->RollBackTo(prefix.size() + 2, *catalog);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange) << st.ToString();
  EXPECT_EQ(wrapped->position(), prefix.size() + 17);
  EXPECT_EQ(wrapped->RollBackTo(prefix.size() - 1, *catalog).code(), ErrorCode::kOutOfRange);  // before the base
  EXPECT_EQ(wrapped->RollBackTo(prefix.size() + 18, *catalog).code(), ErrorCode::kOutOfRange);  // past the state
}

// Requests through FunctionCaller with and without reuse: the same tokens, request after request,
// short ones (the turns fit a ring: positions kept, a repeat keeps all but its last token) and long
// ones (the call wraps the rings: the whole state is copied, nothing kept).
TEST(PromptReuse, CallsEqualWithAndWithoutReuse) {
  auto& w = test::ConstrainedWorld::Get();
  OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
  auto make = [&](bool reuse) {
    FunctionCallerOptions o;
    o.threads = 2;
    o.context = 1024;
    o.reuse_prompt = reuse;
    return FunctionCaller::Create(LoadedModel::FromParts(w.model, w.tokenizer).value(), o).value();
  };
  auto with = make(true), without = make(false);
  // tool_choice auto: the first token is the model's, so the turn is evaluated even when the call
  // stops after a token or two (a required call's opening would be written without a pass).
  struct Step {
    const char* utterance;
    ToolChoiceMode mode;
    size_t max_tokens;
  };
  const ToolChoiceMode kAuto = ToolChoiceMode::kAuto, kRequired = ToolChoiceMode::kRequired;
  const Step steps[] = {{"Volume 70", kAuto, 2},  {"Volume 70", kAuto, 2}, {"Volume 20", kAuto, 3},
                        {"Lights on", kAuto, 1},  {"turn on the kitchen lights please", kRequired, 0},
                        {"Volume 70", kAuto, 2},  {"Volume 70", kRequired, 0}, {"Volume 70", kAuto, 1}};
  size_t reused = 0, calls_reusing = 0;
  for (const Step& step : steps) {
    CallRequest req{test::MakeRequest(tools, step.utterance), ToolChoice{step.mode, ""}, {}, {}};
    req.limits.max_tokens = step.max_tokens;
    const auto both = test::CallBoth(*with, *without, req, step.utterance);
    ASSERT_TRUE(both.has_value());
    const CallTiming &a = both->first.timing, &b = both->second.timing;
    EXPECT_EQ(b.reused_tokens, 0u);
    EXPECT_LT(a.reused_tokens, a.prompt_tokens);
    reused += a.reused_tokens;
    calls_reusing += a.reused_tokens > 0;
  }
  // The second "Volume 70" keeps all of its turn but the last token; "Volume 20" its opening.
  std::printf("%zu tokens kept over %zu calls\n", reused, calls_reusing);
  EXPECT_GE(calls_reusing, 3u);
}

}  // namespace
}  // namespace fgemma
