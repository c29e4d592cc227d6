// FunctionCaller with a LoRA adapter: the catalog cache (memory, file) and the restricted head and
// jump-forward change no token; cache files are bound to the adapter and its scale.
#include <filesystem>

#include "constrained_support.h"
#include "model/lora_adapter.h"
#include "runtime/function_caller.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

class LoraCallerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto model = Model::Load(test::FixturePath("models/mini-bf16"));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto loaded = LoadedModel::FromParts(std::move(model).value(), test::ConstrainedWorld::Get().tokenizer);
    ASSERT_TRUE(loaded.ok());
    loaded_ = new LoadedModel(std::move(loaded).value());
  }
  static void TearDownTestSuite() {
    delete loaded_;
    loaded_ = nullptr;
  }
  static std::shared_ptr<const LoraAdapter> Adapter(float scale) {
    auto a = LoraAdapter::Load(test::FixturePath("lora/mini-lora-s14"), loaded_->model->config(), scale);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return std::move(a).value();
  }
  std::unique_ptr<FunctionCaller> NewCaller(std::shared_ptr<const LoraAdapter> lora, const std::string& cache,
                                            bool speedups = true) {
    FunctionCallerOptions o;
    o.threads = 2;
    o.context = 2048;
    o.cache_path = cache;
    o.lora = std::move(lora);
    o.decoding.restricted_head = speedups;
    o.decoding.jump_forward = speedups;
    auto c = FunctionCaller::Create(*loaded_, o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  static ChatRequest SmartHome(const std::string& utterance) {
    OrderedJson tools = ParseOrderedJson(ReadFileToString(test::FixturePath("chat/smart-home-tools.json")).value(), "tools").value();
    return test::MakeRequest(tools, utterance);
  }
  const ToolChoice kRequired{ToolChoiceMode::kRequired, ""};
  static LoadedModel* loaded_;
};
LoadedModel* LoraCallerTest::loaded_ = nullptr;

TEST_F(LoraCallerTest, SpeedupsAndCacheChangeNoToken) {
  const ChatRequest req = SmartHome("turn on the kitchen lights please");
  const std::string cache = test::TempDir() + "/catalog.kv";
  auto lora = Adapter(1.0f);
  auto plain = NewCaller(lora, "", false);
  const auto reference = plain->Call({req, kRequired}).value();
  ASSERT_TRUE(reference.parsed.ok()) << reference.parsed.ErrorSummary();
  // The adapter changes what this model says (else the checks below would prove nothing).
  auto base = NewCaller(nullptr, "", false);
  EXPECT_NE(base->Call({req, kRequired}).value().output_tokens, reference.output_tokens);

  auto fast = NewCaller(lora, cache);
  const auto cold = fast->Call({req, kRequired}).value();
  const auto warm = fast->Call({req, kRequired}).value();
  EXPECT_EQ(cold.timing.cache_source, "built");
  EXPECT_EQ(warm.timing.cache_source, "memory");
  EXPECT_EQ(cold.output_tokens, reference.output_tokens);
  EXPECT_EQ(warm.output_tokens, reference.output_tokens);
  auto reader = NewCaller(Adapter(1.0f), cache);  // the same adapter loaded again: the file is reused
  const auto from_file = reader->Call({req, kRequired}).value();
  EXPECT_EQ(from_file.timing.cache_source, "file");
  EXPECT_EQ(from_file.output_tokens, reference.output_tokens);
}

TEST_F(LoraCallerTest, CacheFilesAreBoundToTheAdapterAndScale) {
  const ChatRequest req = SmartHome("play some jazz in the living room");
  const std::string cache = test::TempDir() + "/catalog.kv";
  auto expect = [&](std::shared_ptr<const LoraAdapter> lora, const std::string& source, const std::string& why) {
    auto c = NewCaller(lora, cache);
    const auto out = c->Call({req, kRequired}).value();
    EXPECT_EQ(out.timing.cache_source.rfind(source, 0), 0u) << out.timing.cache_source;
    const auto warnings = c->TakeWarnings();
    if (!why.empty()) {
      ASSERT_EQ(warnings.size(), 1u);
      EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
    }
    // Whatever the file, the answer is the one a fresh prefill with this adapter gives.
    EXPECT_EQ(out.output_tokens, NewCaller(lora, "", false)->Call({req, kRequired}).value().output_tokens);
  };
  expect(nullptr, "built", "");                                                    // made without an adapter
  expect(Adapter(1.0f), "built (file rejected", "built without a LoRA adapter");   // with one: rebuilt
  expect(Adapter(1.0f), "file", "");
  expect(Adapter(0.5f), "built (file rejected", "another LoRA adapter or scale");  // another scale
  expect(nullptr, "built (file rejected", "built with a LoRA adapter, this session has none");
}

}  // namespace
}  // namespace fgemma
