// The C++ API (fgemma.hpp) against libfgemma.so: this binary links the shared library and not the
// engine, so every wrapper runs through the exported C API (checked first). Each wrapper is
// exercised on the mini fixture model, its results compared with the C API's or with an
// independent computation, and its failures checked to come back as Result errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fgemma/fgemma.hpp"
#include "test_support.h"

namespace {

using fgemma::api::Caller;
using fgemma::api::Model;
using fgemma::api::Session;
using nlohmann::json;

const char* kMessages =
    R"([{"role":"developer","content":"You are a model that can do function calling with the following functions"},)"
    R"({"role":"user","content":"Turn on the kitchen lights"}])";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `cache_path` must outlive the params (the C API copies it in fgemma_caller_new).
fgemma_caller_params CallerParams(const std::string& cache_path = "") {
  fgemma_caller_params p = fgemma_caller_default_params();
  p.n_ctx = 2048;
  p.n_threads = 1;
  p.cache_path = cache_path.empty() ? nullptr : cache_path.c_str();
  return p;
}

fgemma_session_params SessionParams() {
  fgemma_session_params p = fgemma_session_default_params();
  p.n_ctx = 512;
  p.n_threads = 1;
  return p;
}

std::set<std::string> DeclaredNames(const std::string& tools) {
  std::set<std::string> names;
  for (const auto& t : json::parse(tools)) names.insert(t["function"]["name"].get<std::string>());
  return names;
}

TEST(CppApiLinkage, CApiComesFromTheSharedLibrary) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&fgemma_model_load), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  EXPECT_NE(std::string(info.dli_fname).find("libfgemma.so"), std::string::npos) << info.dli_fname;
}

TEST(CppApiModel, MissingPathIsAnErrorWithStatusAndMessage) {
  auto model = Model::Load("/nonexistent/fgemma-model");
  ASSERT_FALSE(model.ok());
  EXPECT_FALSE(static_cast<bool>(model));
  EXPECT_EQ(model.error().status, FGEMMA_ERR_NOT_FOUND);
  EXPECT_EQ(model.status(), FGEMMA_ERR_NOT_FOUND);
  EXPECT_NE(model.error().message.find("/nonexistent/fgemma-model"), std::string::npos) << model.error().message;
}

TEST(CppApiModel, MissingTokenizerInParamsIsAnError) {
  fgemma_model_params p = fgemma_model_default_params();
  p.tokenizer_path = "/nonexistent/tokenizer.json";
  auto model = Model::Load(fgemma::test::FixturePath("models/mini-bf16"), p);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().status, FGEMMA_OK);
  EXPECT_NE(model.error().message.find("/nonexistent/tokenizer.json"), std::string::npos) << model.error().message;
}

TEST(CppApiModel, CorruptConfigIsAnError) {
  const std::string dir = fgemma::test::TempDir();
  std::filesystem::copy(fgemma::test::FixturePath("models/mini-bf16"), dir);
  std::ofstream(dir + "/config.json") << "{\"vocab_size\": ";
  auto model = Model::Load(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().status, FGEMMA_OK);
  EXPECT_FALSE(model.error().message.empty());
}

class CppApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(fgemma::test::FixturePath("models/mini-bf16"));
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = new Model(std::move(m).value());
    tools_ = new std::string(ReadText(fgemma::test::FixturePath("chat/smart-home-tools.json")));
    ASSERT_FALSE(tools_->empty());
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tools_;
    model_ = nullptr;
    tools_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(model_, nullptr); }
  static Model* model_;
  static std::string* tools_;
};
Model* CppApiTest::model_ = nullptr;
std::string* CppApiTest::tools_ = nullptr;

TEST_F(CppApiTest, ModelProperties) {
  EXPECT_EQ(model_->vocab_size(), 262144);
  EXPECT_EQ(model_->vocab_size(), fgemma_model_vocab_size(model_->get()));
  EXPECT_EQ(model_->bos(), 2);
  EXPECT_TRUE(model_->is_eos(1));  // <eos>
  EXPECT_FALSE(model_->is_eos(model_->bos()));
  // A copy shares the handle.
  Model copy = *model_;
  EXPECT_EQ(copy.get(), model_->get());
}

TEST_F(CppApiTest, TokenizeDetokenizeRoundTrip) {
  const std::string text = "Turn on the kitchen lights \xe2\x80\x94 20 \xc2\xb0" "C in \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x99\x82!";
  auto ids = model_->Tokenize(text, /*add_bos=*/true);
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  ASSERT_GT(ids->size(), 5u);
  EXPECT_EQ(ids->front(), model_->bos());
  // The same ids as the C API.
  std::vector<int32_t> c_ids(ids->size() + 4, -1);
  ASSERT_EQ(fgemma_tokenize(model_->get(), text.data(), text.size(), true, false, c_ids.data(), c_ids.size()),
            static_cast<int64_t>(ids->size()));
  c_ids.resize(ids->size());
  EXPECT_EQ(*ids, c_ids);

  auto back = model_->Detokenize(*ids, /*skip_special=*/true);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, text);
  auto with_special = model_->Detokenize(*ids);
  ASSERT_TRUE(with_special.ok());
  EXPECT_EQ(*with_special, "<bos>" + text);

  // Control tokens are matched only when asked to.
  auto special = model_->Tokenize("<start_of_turn>", false, /*parse_special=*/true);
  auto literal = model_->Tokenize("<start_of_turn>", false, false);
  ASSERT_TRUE(special.ok() && literal.ok());
  EXPECT_EQ(special->size(), 1u);
  EXPECT_GT(literal->size(), 1u);
  auto empty = model_->Tokenize("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto empty_text = model_->Detokenize({});
  ASSERT_TRUE(empty_text.ok());
  EXPECT_EQ(*empty_text, "");
}

TEST_F(CppApiTest, DetokenizeOutOfRangeIdIsAnError) {
  const std::vector<int32_t> ids = {2, model_->vocab_size()};
  auto text = model_->Detokenize(ids);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().status, FGEMMA_ERR_OUT_OF_RANGE);
  EXPECT_FALSE(text.error().message.empty());
}

TEST_F(CppApiTest, RenderMatchesTheTemplateGoldens) {
  const json cases = json::parse(ReadText(fgemma::test::FixturePath("chat/renders-dev.json")));
  ASSERT_FALSE(cases.empty());
  size_t checked = 0, with_generation_prompt = 0;
  for (const auto& c : cases) {
    json request = {{"tools", c.contains("tools") ? c["tools"] : json(nullptr)},
                    {"messages", c["messages"]},
                    {"add_generation_prompt", c["add_generation_prompt"]}};
    if (request["tools"].is_null()) request.erase("tools");
    auto prompt = model_->Render(request.dump());
    ASSERT_TRUE(prompt.ok()) << "case " << checked << ": " << prompt.error().message;
    EXPECT_EQ(*prompt, c["expected"].get<std::string>()) << "case " << checked;
    with_generation_prompt += c["add_generation_prompt"].get<bool>();
    ++checked;
  }
  EXPECT_EQ(checked, cases.size());
  // The goldens hold both kinds.
  EXPECT_GT(with_generation_prompt, 0u);
  EXPECT_LT(with_generation_prompt, checked);
}

TEST_F(CppApiTest, RenderErrors) {
  auto bad = model_->Render("{\"messages\": [");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(bad.error().message.empty());
  auto no_messages = model_->Render(R"({"messages": []})");
  ASSERT_FALSE(no_messages.ok());
  EXPECT_NE(no_messages.error().message.find("messages"), std::string::npos) << no_messages.error().message;
}

TEST_F(CppApiTest, SessionEvalLogitsAndArgmax) {
  auto ids = model_->Tokenize("Turn on the kitchen lights", true);
  ASSERT_TRUE(ids.ok());
  auto session = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(session.ok()) << session.error().message;
  EXPECT_EQ(session->position(), 0);
  std::vector<float> logits(static_cast<size_t>(model_->vocab_size()), 0.0f);
  auto argmax = session->Eval(*ids, logits);
  ASSERT_TRUE(argmax.ok()) << argmax.error().message;
  EXPECT_EQ(session->position(), static_cast<int64_t>(ids->size()));
  // The argmax is the first maximal logit.
  const auto best = std::max_element(logits.begin(), logits.end());
  EXPECT_EQ(*argmax, static_cast<int32_t>(best - logits.begin()));
  EXPECT_NE(*best, 0.0f);

  // Reset and evaluate again: the same logits bit for bit; argmax without logits agrees.
  ASSERT_TRUE(session->Reset().ok());
  EXPECT_EQ(session->position(), 0);
  std::vector<float> again(logits.size(), 0.0f);
  auto argmax2 = session->Eval(*ids, again);
  ASSERT_TRUE(argmax2.ok());
  EXPECT_EQ(again, logits);
  auto other = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(other.ok());
  auto argmax3 = other->Eval(*ids);
  ASSERT_TRUE(argmax3.ok());
  EXPECT_EQ(*argmax3, *argmax);
  // Incremental evaluation: all but the last token, then the last one, gives the same logits.
  auto split = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(split.ok());
  ASSERT_TRUE(split->Eval(std::span<const int32_t>(ids->data(), ids->size() - 1)).ok());
  std::vector<float> last(logits.size(), 0.0f);
  ASSERT_TRUE(split->Eval(std::span<const int32_t>(&ids->back(), 1), last).ok());
  for (size_t i = 0; i < logits.size(); i += 997) EXPECT_NEAR(last[i], logits[i], 1e-3f) << i;
}

TEST_F(CppApiTest, SessionErrorsAreResults) {
  auto session = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> ids = {2, 100, 200};
  std::vector<float> small(10);
  auto r = session->Eval(ids, small);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, FGEMMA_ERR_OUT_OF_RANGE);
  EXPECT_NE(r.error().message.find("vocabulary"), std::string::npos) << r.error().message;
  auto empty = session->Eval({});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
  const std::vector<int32_t> bad = {2, -5};
  auto out_of_vocab = session->Eval(bad);
  ASSERT_FALSE(out_of_vocab.ok());
  EXPECT_NE(out_of_vocab.error().message.find("-5"), std::string::npos) << out_of_vocab.error().message;
  EXPECT_EQ(session->position(), 0);  // failed evaluations leave the position unchanged

  // A context of 8 positions refuses a 9-token prompt.
  fgemma_session_params p = SessionParams();
  p.n_ctx = 8;
  auto tiny = Session::Create(*model_, p);
  ASSERT_TRUE(tiny.ok());
  const std::vector<int32_t> nine(9, 100);
  auto over = tiny->Eval(nine);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().status, FGEMMA_ERR_OUT_OF_RANGE);

  p.n_threads = -1;
  auto refused = Session::Create(*model_, p);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().status, FGEMMA_ERR_INVALID_ARGUMENT);

  // A moved-from handle is refused by the C API, not dereferenced.
  Session moved = std::move(session).value();
  auto stale = session->Eval(ids);  // NOLINT(bugprone-use-after-move): checking exactly that
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_FALSE(session->Reset().ok());
  EXPECT_TRUE(moved.Eval(ids).ok());
}

TEST_F(CppApiTest, GenerateStreamsEveryTokenAndMatchesEval) {
  auto prompt = model_->Tokenize("Turn on the kitchen lights", true);
  ASSERT_TRUE(prompt.ok());
  auto session = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(session.ok());
  std::vector<int32_t> streamed;
  std::string text;
  auto out = session->Generate(*prompt, 12, /*stop_at_eos=*/false, [&](int32_t id, std::string_view piece) {
    streamed.push_back(id);
    text.append(piece);
    return true;
  });
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 12u);
  EXPECT_EQ(*out, streamed);
  EXPECT_EQ(session->position(), static_cast<int64_t>(prompt->size() + 11));  // the last token is not evaluated
  // The streamed text is the detokenization (up to a character still incomplete at the end).
  auto decoded = model_->Detokenize(*out);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->substr(0, text.size()), text);
  EXPECT_GE(text.size() + 3, decoded->size());

  // Greedy: each token is the argmax after the previous ones.
  auto check = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(check.ok());
  auto next = check->Eval(*prompt);
  ASSERT_TRUE(next.ok());
  for (size_t i = 0; i < out->size(); ++i) {
    ASSERT_EQ(*next, (*out)[i]) << "token " << i;
    next = check->Eval(std::span<const int32_t>(&(*out)[i], 1));
    ASSERT_TRUE(next.ok());
  }

  // Without a callback: the same tokens.
  ASSERT_TRUE(session->Reset().ok());
  auto plain = session->Generate(*prompt, 12, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, *out);
}

TEST_F(CppApiTest, GenerateCallbackCancels) {
  auto prompt = model_->Tokenize("Turn on the kitchen lights", true);
  ASSERT_TRUE(prompt.ok());
  auto session = Session::Create(*model_, SessionParams());
  ASSERT_TRUE(session.ok());
  int calls = 0;
  auto out = session->Generate(*prompt, 20, false, [&](int32_t, std::string_view) { return ++calls < 3; });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().status, FGEMMA_ERR_CANCELLED);
  EXPECT_EQ(calls, 3);

  // An exception in the callback cancels the call and reaches the caller (not through the C API).
  ASSERT_TRUE(session->Reset().ok());
  calls = 0;
  EXPECT_THROW(session->Generate(*prompt, 20, false,
                                 [&](int32_t, std::string_view) -> bool {
                                   if (++calls == 2) throw std::runtime_error("stop here");
                                   return true;
                                 }),
               std::runtime_error);
  EXPECT_EQ(calls, 2);
  // The session stays usable.
  ASSERT_TRUE(session->Reset().ok());
  auto again = session->Generate(*prompt, 4, false);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->size(), 4u);
}

TEST_F(CppApiTest, CallerCallsWithCacheFile) {
  const std::string cache = fgemma::test::TempDir() + "/catalog.kv";
  auto caller = Caller::Create(*model_, CallerParams(cache));
  ASSERT_TRUE(caller.ok()) << caller.error().message;
  auto first = caller->Call(*tools_, kMessages, "required");
  ASSERT_TRUE(first.ok()) << first.error().message;
  const json j1 = json::parse(*first);
  ASSERT_TRUE(j1["calls"].is_array());
  ASSERT_FALSE(j1["calls"].empty()) << *first;
  const auto names = DeclaredNames(*tools_);
  for (const auto& c : j1["calls"]) {
    EXPECT_TRUE(names.count(c["name"].get<std::string>())) << c.dump();
    EXPECT_TRUE(c["arguments"].is_object());
    EXPECT_FALSE(c.contains("errors")) << c.dump();
  }
  EXPECT_FALSE(j1.contains("error")) << *first;
  EXPECT_EQ(j1["timing"]["cache"], "built");
  EXPECT_TRUE(std::filesystem::exists(cache));
  // ResultJson repeats the last outcome.
  auto last = caller->ResultJson();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, *first);

  // Same caller: the catalog comes from memory; a new caller: from the file. Same calls each time.
  auto second = caller->Call(*tools_, kMessages, "required");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(json::parse(*second)["timing"]["cache"], "memory");
  EXPECT_EQ(json::parse(*second)["calls"], j1["calls"]);
  auto fresh = Caller::Create(*model_, CallerParams(cache));
  ASSERT_TRUE(fresh.ok());
  auto third = fresh->Call(*tools_, kMessages, "required");
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(json::parse(*third)["timing"]["cache"], "file");
  EXPECT_EQ(json::parse(*third)["calls"], j1["calls"]);

  // A named function as tool_choice, plain or as an OpenAI object.
  for (const std::string& choice :
       {std::string("set_volume"), std::string(R"({"type":"function","function":{"name":"set_volume"}})")}) {
    auto named = caller->Call(*tools_, kMessages, choice);
    ASSERT_TRUE(named.ok()) << named.error().message;
    const json jn = json::parse(*named);
    ASSERT_FALSE(jn["calls"].empty());
    for (const auto& c : jn["calls"]) EXPECT_EQ(c["name"], "set_volume");
  }
  // tool_choice none: a text answer, no calls.
  auto none = caller->Call(*tools_, kMessages, "none");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(json::parse(*none)["calls"].empty()) << *none;
}

TEST_F(CppApiTest, CallOpenAIEqualsCall) {
  auto caller = Caller::Create(*model_, CallerParams());
  ASSERT_TRUE(caller.ok());
  auto direct = caller->Call(*tools_, kMessages, "required");
  ASSERT_TRUE(direct.ok());
  const json body = {{"model", "any"},
                     {"tools", json::parse(*tools_)},
                     {"messages", json::parse(kMessages)},
                     {"tool_choice", "required"}};
  auto openai = caller->CallOpenAI(body.dump());
  ASSERT_TRUE(openai.ok()) << openai.error().message;
  EXPECT_EQ(json::parse(*openai)["calls"], json::parse(*direct)["calls"]);
  auto bad = caller->CallOpenAI("[1,2");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
}

TEST_F(CppApiTest, CallerStreamsTokensAndCancels) {
  auto caller = Caller::Create(*model_, CallerParams());
  ASSERT_TRUE(caller.ok());
  std::vector<int32_t> ids;
  std::string text;
  auto out = caller->Call(*tools_, kMessages, "required", [&](int32_t id, std::string_view piece) {
    ids.push_back(id);
    text.append(piece);
    return true;
  });
  ASSERT_TRUE(out.ok()) << out.error().message;
  const json j = json::parse(*out);
  EXPECT_EQ(ids.size(), j["timing"]["generated_tokens"].get<size_t>());
  EXPECT_NE(text.find("<start_function_call>call:" + j["calls"][0]["name"].get<std::string>() + "{"), std::string::npos)
      << text;
  auto decoded = model_->Detokenize(ids);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, text);

  // The callback cancels.
  int seen = 0;
  auto cancelled = caller->Call(*tools_, kMessages, "required", [&](int32_t, std::string_view) { return ++seen < 2; });
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().status, FGEMMA_ERR_CANCELLED);
  EXPECT_EQ(seen, 2);
  // A failed call leaves no result behind.
  auto stale = caller->ResultJson();
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(*stale, "");

  // Cancel() from another thread while the call runs.
  std::atomic<int> tokens{0};
  std::thread canceller([&] {
    while (tokens.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(caller->Cancel().ok());
  });
  auto remote = caller->Call(*tools_, kMessages, "required", [&](int32_t, std::string_view) {
    ++tokens;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return true;
  });
  canceller.join();
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.error().status, FGEMMA_ERR_CANCELLED);
  // The cancel was consumed: the next call runs and gives the first call's answer.
  auto after = caller->Call(*tools_, kMessages, "required");
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(json::parse(*after)["calls"], j["calls"]);

  // An exception thrown by the callback is rethrown after the call.
  EXPECT_THROW(caller->Call(*tools_, kMessages, "required",
                            [](int32_t, std::string_view) -> bool { throw std::logic_error("callback failed"); }),
               std::logic_error);
}

TEST_F(CppApiTest, CallerErrorsAreResults) {
  auto caller = Caller::Create(*model_, CallerParams());
  ASSERT_TRUE(caller.ok());
  auto malformed = caller->Call("[{", kMessages);
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(malformed.error().message.find("tools"), std::string::npos) << malformed.error().message;
  auto unknown = caller->Call(*tools_, kMessages, "open_the_pod_bay_doors");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("open_the_pod_bay_doors"), std::string::npos) << unknown.error().message;
  auto no_messages = caller->Call(*tools_, "[]");
  ASSERT_FALSE(no_messages.ok());
  EXPECT_NE(no_messages.error().status, FGEMMA_OK);

  // A context too small for the prompt.
  fgemma_caller_params p = CallerParams();
  p.n_ctx = 64;
  auto small = Caller::Create(*model_, p);
  ASSERT_TRUE(small.ok());
  auto too_long = small->Call(*tools_, kMessages, "required");
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().status, FGEMMA_ERR_OUT_OF_RANGE);

  // A token budget.
  p = CallerParams();
  p.max_tokens = 2;
  auto budget = Caller::Create(*model_, p);
  ASSERT_TRUE(budget.ok());
  auto over = budget->Call(*tools_, kMessages, "required");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().status, FGEMMA_ERR_BUDGET);

  p = CallerParams();
  p.n_ctx = 0;
  auto refused = Caller::Create(*model_, p);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().status, FGEMMA_ERR_INVALID_ARGUMENT);
}

}  // namespace

namespace {

// A LoRA adapter through the C++ wrapper: the params' lora_path; its logits match the reference
// with the adapter merged, a bad adapter is an error with its status.
TEST(CppApiLora, SessionWithAnAdapter) {
  auto model = Model::Load(fgemma::test::FixturePath("models/mini-bf16"));
  ASSERT_TRUE(model) << model.error().message;
  const json golden = json::parse(ReadText(fgemma::test::FixturePath("lora/golden-mini-bf16-lora-s14.json")));
  const std::string lora = fgemma::test::FixturePath("lora/mini-lora-s14");
  fgemma_session_params p = SessionParams();
  p.lora_path = lora.c_str();
  auto session = Session::Create(*model, p);
  ASSERT_TRUE(session) << session.error().message;
  std::vector<int32_t> tokens = golden["tokens"].get<std::vector<int32_t>>();
  const size_t pos = golden["positions"][3].get<size_t>();
  std::vector<float> logits(262144);
  auto argmax = session->Eval(std::span<const int32_t>(tokens.data(), pos + 1), logits);
  ASSERT_TRUE(argmax) << argmax.error().message;
  for (const auto& e : golden["top10"][3]) EXPECT_NEAR(logits[e[0].get<size_t>()], e[1].get<double>(), 2e-3);

  p.lora_path = "/nonexistent/adapter";
  auto bad = Session::Create(*model, p);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().status, FGEMMA_ERR_NOT_FOUND);
}

}  // namespace
