// Hostile request JSON: nesting deep enough to overflow any recursion over the value is refused while
// parsing, naming the source and byte offset; a member of the wrong type is the request's error,
// naming the field, never an escaped nlohmann exception.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "chat/render.h"
#include "chat/request.h"
#include "chat_test_util.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

constexpr size_t kDeep = 100000;

std::string Deep(size_t depth = kDeep) { return std::string(depth, '[') + std::string(depth, ']'); }

void ExpectDepthError(const Status& status, const std::string& what) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find(what + ": JSON nested deeper than 128 levels at byte "), std::string::npos)
      << status.ToString();
}

TEST(HostileJson, DeepMessagesToolChoiceAndToolsAreRefusedWhileParsing) {
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string tool = R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})";
  const std::vector<std::string> bodies = {
      R"({"messages":)" + Deep() + "}",
      R"({"messages":[)" + user + "," + Deep(4 * kDeep) + "]}",
      R"({"messages":[{"role":"tool","name":"f","content":)" + Deep(4 * kDeep) + "}]}",
      R"({"model":"m","tool_choice":)" + Deep() + R"(,"messages":[)" + user + "]}",
      R"({"model":)" + Deep() + R"(,"messages":[)" + user + "]}",
      R"({"tools":[{"type":"function","function":{"name":"f","parameters":)" + Deep() + R"(}}],"messages":[)" + user + "]}",
      R"({"tools":[{"type":"function","function":{"name":"f","x":)" + Deep() + R"(}}],"messages":[)" + user + "]}",
      R"({"tools":[)" + tool + "],\"messages\":[" + user + "]," + std::string(kDeep, '{'),  // unclosed, too
  };
  for (const std::string& body : bodies) {
    ExpectDepthError(ParseChatRequestText(body, "request body").status(), "request body");
    // What the server does first with a body, before looking at any member.
    ExpectDepthError(ParseOrderedJson(body, "request body").status(), "request body");
  }
}

TEST(HostileJson, DeepArgumentsTextIsRefusedNamingTheField) {
  const std::string args = Deep();
  OrderedJson body = J(R"({"model":"m","messages":[{"role":"user","content":"hi"},
      {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}]})");
  body["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{\"a\":" + args + "}";
  ExpectDepthError(ParseChatRequest(body).status(), "messages[1].tool_calls[0].function.arguments");
}

TEST(HostileJson, NestingUpToTheLimitStillParses) {
  // 128 levels in all: the body, `messages`, one message object, then 125 levels of content arrays
  // (the parser accepts them; the content is then reported as the wrong shape, not a depth error).
  const std::string body = R"({"messages":[{"role":"user","content":)" + Deep(125) + "}]}";
  auto parsed = ParseOrderedJson(body, "b");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto req = ParseChatRequest(*parsed);
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().message().find("nested deeper"), std::string::npos) << req.status().ToString();
  ExpectDepthError(ParseOrderedJson(R"({"messages":[{"role":"user","content":)" + Deep(126) + "}]}", "b").status(), "b");
}

TEST(HostileJson, ContentPartWithANumberTypeIsAFieldError) {
  struct Case {
    std::string body, error;
  };
  const std::vector<Case> cases = {
      // The issue's case: a tool message in an OpenAI body, whose content elements are content parts.
      {R"({"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","name":"f","content":[{"type":5}]}]})",
       "messages[1].content[0].type: must be a string, got integer"},
      {R"({"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},
          {"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"a"},{"type":[5],"text":"x"}]}]})",
       "messages[1].content[1].type: must be a string, got array"},
      {R"({"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","name":"f","content":[{"type":"text","text":5}]}]})",
       "messages[1].content[0].text: must be a string, got integer"},
      // In a template-input body the elements are tool responses: without a name anywhere, refused.
      {R"({"messages":[{"role":"user","content":"hi"},{"role":"tool","content":[{"type":5}]}]})",
       "messages[1].content[0]: a tool response needs"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":5}]}]})",
       "messages[0].content[0].type: must be a string, got integer"},
      {R"({"messages":[{"role":"user","content":[{"type":"text","text":[1]}]}]})", "messages[0].content[0].text: must be a string"},
      {R"({"model":"m","messages":[{"role":"tool","name":"f","content":[{"name":5,"response":{}}]}]})",
       "messages[0].content[0].name: must be a string, got integer"},
  };
  for (const Case& c : cases) {
    Result<ChatRequest> req = InvalidArgument("not run");
    EXPECT_NO_THROW(req = ParseChatRequestText(c.body, "req")) << c.body;
    ASSERT_FALSE(req.ok()) << c.body;
    EXPECT_EQ(req.status().code(), ErrorCode::kInvalidArgument) << req.status().ToString();
    EXPECT_NE(req.status().message().find(c.error), std::string::npos) << req.status().ToString();
  }
}

// Every member of a rich request (both formats) replaced in turn by a value of each other type: the
// parser and renderer answer with a Status, never an exception.
TEST(HostileJson, NoMemberOfTheWrongTypeThrows) {
  const OrderedJson base = J(R"({"model":"m","tools":[{"type":"function","function":{"name":"get_weather",
      "description":"d","parameters":{"type":"object","properties":{"city":{"type":"string","description":"c",
      "enum":["a","b"]},"days":{"type":"array","items":{"type":"integer"}},"opts":{"type":"object",
      "properties":{"x":{"type":"boolean","nullable":true}},"required":["x"],"additionalProperties":false}},
      "required":["city"]}}}],"tool_choice":"auto","add_generation_prompt":true,
      "messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather",
      "arguments":"{\"city\":\"a\"}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"sunny"}]},
      {"role":"tool","name":"get_weather","content":{"name":"get_weather","response":{"t":1}}},
      {"role":"assistant","content":"ok"}]})");
  // JSON pointers of every value in `base` (the document is ours and shallow, so recursion is fine).
  std::vector<OrderedJson::json_pointer> pointers;
  std::function<void(const OrderedJson&, const OrderedJson::json_pointer&)> collect =
      [&](const OrderedJson& v, const OrderedJson::json_pointer& at) {
        pointers.push_back(at);
        if (v.is_object()) {
          for (const auto& [k, m] : v.items()) collect(m, at / k);
        } else if (v.is_array()) {
          for (size_t i = 0; i < v.size(); ++i) collect(v[i], at / i);
        }
      };
  collect(base, OrderedJson::json_pointer());
  const std::vector<OrderedJson> replacements = {5, -1.5, true, nullptr, "text", OrderedJson::array(), OrderedJson::object(),
                                                 OrderedJson::array({5}), OrderedJson{{"type", 5}}};
  size_t runs = 0;
  for (const auto& pointer : pointers) {
    for (const OrderedJson& replacement : replacements) {
      OrderedJson body = base;
      body[pointer] = replacement;
      for (RequestFormat format : {RequestFormat::kOpenAI, RequestFormat::kTemplateInput}) {
        ++runs;
        EXPECT_NO_THROW({
          auto req = ParseChatRequest(body, format);
          if (req.ok()) (void)RenderPrompt(*req, RenderOptions());
        }) << pointer.to_string()
           << " = " << replacement.dump();
      }
    }
  }
  EXPECT_GT(runs, 500u);
}

TEST(HostileJson, CliRenderRefusesADeepToolsFile) {
  // 200,000 levels in a tool's parameters, as in the issue: exit code 1 with the depth error, no signal.
  const std::string path = TempDir() + "/deep-request.json";
  ASSERT_TRUE(WriteStringToFile(path, R"({"tools":[{"type":"function","function":{"name":"f","parameters":)" +
                                          Deep(200000) + R"(}}],"messages":[{"role":"user","content":"hi"}]})")
                  .ok());
  for (const char* raw : {"", " --raw"}) {
    std::string out;
    EXPECT_EQ(RunCommand(CliPath() + " render" + raw + " --request " + path + " 2>&1", &out), 1) << out;
    EXPECT_NE(out.find(path + ": JSON nested deeper than 128 levels at byte 189"), std::string::npos) << out;
  }
}

TEST(HostileJson, CliCallRefusesADeepToolsFileBeforeLoadingAModel) {
  const std::string path = TempDir() + "/deep-tools.json";
  ASSERT_TRUE(WriteStringToFile(path, Deep(200000)).ok());
  std::string out;
  EXPECT_EQ(RunCommand(CliPath() + " call --model /nonexistent --tools " + path + " hi 2>&1", &out), 1) << out;
  EXPECT_NE(out.find(path + ": JSON nested deeper than 128 levels at byte 128"), std::string::npos) << out;
}

TEST(HostileJson, CliRenderRawChecksTheGenerationPromptFlag) {
  const std::string path = TempDir() + "/agp.json";
  ASSERT_TRUE(WriteStringToFile(path, R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":"yes"})").ok());
  std::string out;
  EXPECT_EQ(RunCommand(CliPath() + " render --raw --request " + path + " 2>&1", &out), 1) << out;
  EXPECT_NE(out.find("add_generation_prompt: must be a boolean, got string"), std::string::npos) << out;
}

}  // namespace
}  // namespace fgemma::test
