// Prompt reuse over 200 requests: random catalogs (a few, so requests return to one), random and
// repeated utterances, every tool_choice mode, short and whole calls. A caller that keeps the
// positions a request shares with the previous one answers token for token as one that evaluates
// every turn from the restored catalog state.
#include "../runtime/constrained_support.h"

namespace fgemma {
namespace {

TEST(PromptReuseHeavy, TwoHundredRequestsEqualWithAndWithoutReuse) {
  auto& w = test::ConstrainedWorld::Get();
  test::CatalogGenerator gen(1405);
  std::vector<OrderedJson> catalogs;
  for (size_t i = 0; i < 3; ++i) catalogs.push_back(gen.Tools(1 + gen.Pick(4)));
  auto make = [&](bool reuse) {
    FunctionCallerOptions o;
    o.threads = 2;
    o.context = 2048;
    o.reuse_prompt = reuse;
    o.limits.max_string_bytes = 48;
    o.limits.max_text_bytes = 64;
    return FunctionCaller::Create(LoadedModel::FromParts(w.model, w.tokenizer).value(), o).value();
  };
  auto with = make(true), without = make(false);
  const ToolChoiceMode modes[] = {ToolChoiceMode::kAuto, ToolChoiceMode::kRequired, ToolChoiceMode::kNone,
                                  ToolChoiceMode::kFunction};
  std::string last_utterance = "Volume 70";
  size_t catalog = 0, reused = 0, reusing = 0;
  for (size_t i = 0; i < 200; ++i) {
    if (gen.Pick(8) == 0) catalog = gen.Pick(catalogs.size());  // mostly the same catalog
    const std::string utterance = gen.Pick(3) == 0 ? last_utterance : gen.Utterance();
    last_utterance = utterance;
    ChatRequest chat = test::MakeRequest(catalogs[catalog], utterance);
    ToolChoice choice{modes[gen.Pick(4)], ""};
    if (choice.mode == ToolChoiceMode::kFunction) choice.function = chat.tools[gen.Pick(chat.tools.size())].name;
    CallRequest req{std::move(chat), choice, {}, {}};
    // Mostly a few tokens (the turn and call fit the mini model's 16-row rings: positions kept),
    // sometimes the whole call (the rings wrap: the state is copied whole).
    req.limits.max_tokens = gen.Pick(4) == 0 ? 0 : 1 + gen.Pick(3);
    const auto both = test::CallBoth(*with, *without, req, "request " + std::to_string(i) + ": " + utterance);
    ASSERT_TRUE(both.has_value());
    if (HasFailure()) return;
    reused += both->first.timing.reused_tokens;
    reusing += both->first.timing.reused_tokens > 0;
  }
  std::printf("200 requests: %zu reused a part of the previous turn (%zu tokens)\n", reusing, reused);
  EXPECT_GT(reusing, 20u);
}

}  // namespace
}  // namespace fgemma
