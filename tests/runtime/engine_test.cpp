// The runtime Engine (issue 33): callers of one engine share one pass group per adapter (and
// separate groups across adapters), the one token-budget rule, and a caller made by the engine
// answers token for token as one whose options are filled by hand.
#include "constrained_support.h"
#include "runtime/engine.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = LoadModel(test::FixturePath("models/mini-bf16"));
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    engine_ = Engine::Create(std::move(loaded).value()).release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static EngineConfig SharingConfig(const std::string& lora, float scale = 1.0f) {
    EngineConfig c;
    c.threads = 2;
    c.context = 2048;
    c.share_passes = true;
    if (!lora.empty()) c.lora = {test::FixturePath(lora), scale};
    return c;
  }
  static std::unique_ptr<FunctionCaller> EngineCaller(const EngineConfig& config) {
    auto c = engine_->NewCaller(config);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  static ChatRequest EngineSmartHome(const std::string& utterance) {
    OrderedJson tools =
        ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
    return test::MakeRequest(tools, utterance);
  }
  static Engine* engine_;
  const ToolChoice kRequired{ToolChoiceMode::kRequired, ""};
};
Engine* EngineTest::engine_ = nullptr;

TEST_F(EngineTest, CallersWithOneAdapterShareOnePassGroup) {
  ASSERT_TRUE(engine_->LivePassGroups().empty());
  auto a = EngineCaller(SharingConfig("lora/mini-lora-s14"));
  auto b = EngineCaller(SharingConfig("lora/mini-lora-s14"));
  ASSERT_NE(a->options().batcher, nullptr);
  EXPECT_EQ(a->options().batcher, b->options().batcher) << "same model, adapter and threads: one group";
  EXPECT_EQ(a->options().lora, b->options().lora) << "one copy of the adapter";
  EXPECT_EQ(engine_->PassGroup(SharingConfig("lora/mini-lora-s14")), a->options().batcher);
  EXPECT_EQ(engine_->LivePassGroups().size(), 1u);

  auto base = EngineCaller(SharingConfig(""));                          // no adapter
  auto scaled = EngineCaller(SharingConfig("lora/mini-lora-s14", 0.5f));  // the adapter at another scale
  EXPECT_NE(base->options().batcher, a->options().batcher);
  EXPECT_NE(scaled->options().batcher, a->options().batcher);
  EXPECT_NE(scaled->options().lora, a->options().lora);
  EXPECT_EQ(engine_->LivePassGroups().size(), 3u);

  EngineConfig alone = SharingConfig("lora/mini-lora-s14");
  alone.share_passes = false;
  auto own = EngineCaller(alone);
  EXPECT_EQ(own->options().batcher, nullptr) << "not sharing passes: no group";
  EXPECT_EQ(own->options().lora, a->options().lora);

  // A group lives as long as its callers.
  a.reset();
  b.reset();
  EXPECT_EQ(engine_->LivePassGroups().size(), 2u);
  EXPECT_EQ(engine_->PassGroup(SharingConfig("lora/mini-lora-s14")), nullptr);
}

TEST_F(EngineTest, OneTokenBudgetRule) {
  EXPECT_EQ(ResolveMaxTokens(0, 4096), kDefaultMaxTokens);
  EXPECT_EQ(kDefaultMaxTokens, 1024u);
  EXPECT_EQ(ResolveMaxTokens(0, 512), 512u) << "the default never exceeds the context";
  EXPECT_EQ(ResolveMaxTokens(100, 4096), 100u);
  EXPECT_EQ(ResolveMaxTokens(5000, 4096), 4096u) << "a budget over the context is capped at it";
  EXPECT_EQ(ConstrainedOptions{}.max_tokens, kDefaultMaxTokens);

  EngineConfig config;
  config.threads = 2;
  config.context = 2048;
  EXPECT_EQ(EngineCaller(config)->options().decoding.max_tokens, 1024u);
  config.context = 512;
  EXPECT_EQ(EngineCaller(config)->options().decoding.max_tokens, 512u);
  config.max_tokens = 64;
  EXPECT_EQ(EngineCaller(config)->options().decoding.max_tokens, 64u);
  config.max_tokens = 600;
  EXPECT_EQ(EngineCaller(config)->options().decoding.max_tokens, 512u);
}

// What `fgemma call` and the C API filled by hand before the engine, against the engine's caller
// from the matching config (alone, and sharing passes with an adapter).
TEST_F(EngineTest, CallerAnswersAsOneBuiltByHand) {
  const ChatRequest req = EngineSmartHome("dim the bedroom lights to 30 percent");
  for (const bool with_adapter : {false, true}) {
    SCOPED_TRACE(with_adapter ? "adapter, shared passes" : "base, alone");
    FunctionCallerOptions by_hand;
    by_hand.threads = 2;
    by_hand.context = 2048;
    if (with_adapter) {
      by_hand.lora =
          LoraAdapter::LoadFor(LoraSpec{test::FixturePath("lora/mini-lora-s14"), 1.0f}, *engine_->loaded().model).value();
    }
    auto hand = FunctionCaller::Create(engine_->loaded(), by_hand).value();
    EngineConfig config = SharingConfig(with_adapter ? "lora/mini-lora-s14" : "");
    config.share_passes = with_adapter;
    auto made = EngineCaller(config);
    const CallOutcome expected = hand->Call({req, kRequired}).value();
    const CallOutcome got = made->Call({req, kRequired}).value();
    EXPECT_FALSE(expected.output_tokens.empty());
    EXPECT_EQ(got.output_tokens, expected.output_tokens);
    EXPECT_EQ(got.prompt_tokens, expected.prompt_tokens);
    EXPECT_EQ(made->options().decoding.max_tokens, by_hand.decoding.max_tokens);
  }
}

TEST_F(EngineTest, AdapterOptionText) {
  EXPECT_EQ(AdapterSpecOf("").value().dir, "");
  const LoraSpec spec = AdapterSpecOf("some/dir:0.5").value();
  EXPECT_EQ(spec.dir, "some/dir");
  EXPECT_EQ(spec.scale, 0.5f);
  EngineConfig config;
  config.lora = {"/nonexistent/adapter", 1.0f};
  EXPECT_FALSE(engine_->NewCaller(config).ok());
}

}  // namespace
}  // namespace fgemma
