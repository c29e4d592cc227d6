// Issue 31: a call that breaks its tool's schema (possible only unconstrained: tool_choice "none"
// text spelling a call, `unconstrained` requests) is reported the same way everywhere: the C API's
// and `fgemma call`'s outcome (calls[].errors, error), the OpenAI response's tool_calls[].errors,
// the streamed tool-call delta, and eval's invalid count (ParsedOutput::ok()).
#include <gtest/gtest.h>

#include "chat/parse_call.h"
#include "eval/eval_score.h"
#include "runtime/function_caller.h"
#include "server/chat_stream.h"
#include "server/openai_format.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace fgemma::server {
namespace {

constexpr std::string_view kOutput = "<start_function_call>call:set_volume{level:150}<end_function_call><end_of_turn>";
const char* kBreach = "arguments.level: 150 is above the maximum 100";

std::vector<Tool> VolumeTool() {
  return ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"set_volume","description":"d",
      "parameters":{"type":"object","properties":{"level":{"type":"integer","minimum":0,"maximum":100}},"required":["level"]}}}])"))
      .value();
}

TEST(SchemaBreachReport, SameMessageInOutcomeResponseStreamAndEval) {
  const std::vector<Tool> tools = VolumeTool();
  CallOutcome outcome;
  outcome.parsed = ParseModelOutput(kOutput, tools);
  ASSERT_EQ(outcome.parsed.calls.size(), 1u);
  ASSERT_EQ(outcome.parsed.calls[0].errors, std::vector<std::string>{kBreach});

  const Json c_api = CallOutcomeToJson(outcome);  // what fgemma_caller_result_json returns
  EXPECT_EQ(c_api["calls"][0]["errors"], Json::array({kBreach}));
  EXPECT_NE(c_api["error"].get<std::string>().find(kBreach), std::string::npos);

  const ResponseMeta meta{"chatcmpl-7", 0, "m"};
  const Json response = CompletionResponse(meta, outcome);
  const Json& call = response["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["errors"], Json::array({kBreach}));
  EXPECT_EQ(call["function"]["arguments"], "{\"level\":150}");

  auto tok = Tokenizer::FromFile(test::FixturePath("models/mini-bf16"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ChatStream stream(tok.value(), tools, meta);
  std::vector<Json> deltas;
  for (int32_t id : tok->Encode(std::string(kOutput))) ASSERT_TRUE(stream.Push(id, &deltas).ok());
  size_t heads = 0;
  for (const Json& d : deltas) {
    if (!d.contains("tool_calls") || !d["tool_calls"][0].contains("id")) continue;
    ++heads;
    EXPECT_EQ(d["tool_calls"][0]["errors"], Json::array({kBreach}));
  }
  EXPECT_EQ(heads, 1u);

  std::vector<ExpectedCall> expected = {{"set_volume", Json::parse(R"({"level":150})")}};
  EXPECT_FALSE(ScoreRow(expected, outcome.parsed, nullptr).valid);  // counted invalid by fgemma eval

  // A valid call carries no errors field anywhere.
  CallOutcome fine;
  fine.parsed = ParseModelOutput("<start_function_call>call:set_volume{level:100}<end_function_call><end_of_turn>", tools);
  EXPECT_FALSE(CompletionResponse(meta, fine)["choices"][0]["message"]["tool_calls"][0].contains("errors"));
  EXPECT_FALSE(CallOutcomeToJson(fine)["calls"][0].contains("errors"));
}

// A union (anyOf, a type list) is reported by the same validator the grammar is tested against:
// the branch of the value's type gives the reason; a value no branch admits is named with them all.
TEST(SchemaBreachReport, UnionBreachesNameTheirReason) {
  const std::vector<Tool> tools = ParseTools(OrderedJson::parse(R"([{"type":"function","function":{"name":"set_volume",
      "description":"d","parameters":{"type":"object","properties":{"level":{"anyOf":[{"type":"integer","minimum":0,"maximum":100},
      {"type":"string","enum":["max"]}]},"step":{"type":["integer","null"],"minimum":1}}}}}])")).value();
  const std::pair<const char*, const char*> cases[] = {
      {"level:150", "arguments.level: 150 is above the maximum 100"},
      {"level:<escape>loud<escape>", "arguments.level: \"loud\" is not one of [\"max\"]"},
      {"level:true", "arguments.level: expected integer or string, got boolean"},
      {"step:0", "arguments.step: 0 is below the minimum 1"},
  };
  const ResponseMeta meta{"chatcmpl-8", 0, "m"};
  for (const auto& [args, want] : cases) {
    CallOutcome outcome;
    outcome.parsed = ParseModelOutput("<start_function_call>call:set_volume{" + std::string(args) + "}<end_function_call><end_of_turn>", tools);
    ASSERT_EQ(outcome.parsed.calls.size(), 1u) << args;
    EXPECT_EQ(outcome.parsed.calls[0].errors, std::vector<std::string>{want}) << args;
    EXPECT_EQ(CompletionResponse(meta, outcome)["choices"][0]["message"]["tool_calls"][0]["errors"], Json::array({want})) << args;
  }
  for (const char* args : {"level:100", "level:<escape>max<escape>", "step:null", "level:0,step:3"}) {
    const ParsedOutput ok = ParseModelOutput("<start_function_call>call:set_volume{" + std::string(args) + "}<end_function_call><end_of_turn>", tools);
    ASSERT_EQ(ok.calls.size(), 1u) << args;
    EXPECT_TRUE(ok.calls[0].errors.empty()) << args;
  }
}

}  // namespace
}  // namespace fgemma::server
