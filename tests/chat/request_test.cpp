// Request parsing and validation: every error names the field at fault.
#include <gtest/gtest.h>

#include "chat/render.h"
#include "chat/request.h"
#include "chat_test_util.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

// A request with one tool whose `parameters` are given, and one user message.
std::string WithParameters(const std::string& parameters) {
  return R"({"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":)" + parameters +
         R"(}}],"messages":[{"role":"user","content":"hi"}]})";
}

std::string ErrorOf(const std::string& body) {
  auto req = ParseChatRequestText(body, "req");
  EXPECT_FALSE(req.ok()) << body;
  return req.ok() ? "" : req.status().message();
}

#define EXPECT_ERROR(body, fragment) EXPECT_NE(ErrorOf(body).find(fragment), std::string::npos) << ErrorOf(body)

TEST(RequestValidation, SchemaErrorsNameTheField) {
  EXPECT_ERROR(R"({"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}},
      {"type":"function","function":{"name":"c","parameters":{"type":"object","properties":{"room":{"type":"null"}}}}}],
      "messages":[{"role":"user","content":"x"}]})",
               "tools[2].function.parameters.properties.room.type: unsupported type 'null'");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"room":{"type":["string","integer"],"minItems":1}}})"),
               "tools[0].function.parameters.properties.room.minItems: no type in the type list has minItems");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"room":{"description":"x"}}})"),
               "tools[0].function.parameters.properties.room.type: missing");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"room":"string"}})"),
               "tools[0].function.parameters.properties.room: must be an object, got string");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"unit":{"type":"string","enum":["c",2]}}})"),
               "tools[0].function.parameters.properties.unit.enum[1]: expected string, got integer");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"unit":{"type":"string","enum":[]}}})"),
               "tools[0].function.parameters.properties.unit.enum: must be a non-empty array");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]})"),
               "tools[0].function.parameters.required[1]: 'b' is not a declared property");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"type":{"type":"string"}}})"),
               "tools[0].function.parameters.properties.type: a parameter named 'type' is dropped from the prompt");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a b":{"type":"string"}}})"),
               "tools[0].function.parameters.properties.a b: parameter name must be non-empty");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"tags":{"type":"array","items":{"type":"list"}}}})"),
               "tools[0].function.parameters.properties.tags.items.type: unsupported type 'list'");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer"}},
      "required":"x"}}})"),
               "tools[0].function.parameters.properties.o.required: must be an array of property names, got string");
  EXPECT_ERROR(WithParameters(R"({"type":"string"})"), "tools[0].function.parameters.type: must be \"object\", got 'string'");
  EXPECT_ERROR(WithParameters(R"({"properties":{"a":{"type":"string"}}})"), "tools[0].function.parameters.type: missing");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a":{"type":"string","description":7}}})"),
               "tools[0].function.parameters.properties.a.description: must be a string, got integer");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"string","maxLength":1},
      {"type":"string","maxLength":2},{"type":"string","maxLength":3},{"type":"string","maxLength":4}]}}})"),
               "tools[0].function.parameters.properties.a.anyOf: 5 branches whose values start alike could be open at once");
  EXPECT_ERROR(WithParameters(R"({"anyOf":[{"type":"object"},{"type":"object","properties":{"b":{"type":"string"}}}]})"),
               "tools[0].function.parameters: a union (anyOf, a type list) at the top is not supported");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}}})"),
               "tools[0].function.parameters.properties.a.oneOf: schema composition is not supported");
  EXPECT_ERROR(WithParameters(R"({"type":"object","properties":{"a":{"type":"string","items":{"type":"string"}}}})"),
               "tools[0].function.parameters.properties.a.items: only arrays have items (type is string)");
}

TEST(RequestValidation, ToolErrorsNameTheField) {
  EXPECT_ERROR(R"({"tools":{"name":"f"},"messages":[{"role":"user","content":"x"}]})", "tools: must be an array of tools, got object");
  EXPECT_ERROR(R"({"tools":[{"type":"function","name":"f"}],"messages":[{"role":"user","content":"x"}]})", "tools[0].function: missing");
  EXPECT_ERROR(R"({"tools":[{"type":"retrieval","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]})",
               "tools[0].type: must be \"function\"");
  EXPECT_ERROR(R"({"tools":[{"function":{"description":"d"}}],"messages":[{"role":"user","content":"x"}]})", "tools[0].function.name: missing");
  EXPECT_ERROR(R"({"tools":[{"function":{"name":"get weather"}}],"messages":[{"role":"user","content":"x"}]})",
               "tools[0].function.name: 'get weather' must be non-empty");
  EXPECT_ERROR(R"({"tools":[{"function":{"name":"f","description":["d"]}}],"messages":[{"role":"user","content":"x"}]})",
               "tools[0].function.description: must be a string, got array");
}

TEST(RequestValidation, MessageErrorsNameTheField) {
  EXPECT_ERROR(R"({"tools":[]})", "messages: missing");
  EXPECT_ERROR(R"({"messages":[]})", "messages: must be a non-empty array");
  EXPECT_ERROR(R"({"messages":[{"content":"x"}]})", "messages[0].role: missing");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"function","content":"y"}]})",
               "messages[1].role: unsupported role 'function'");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":{"text":"x"}}]})",
               "messages[0].content: must be a string, an array of content parts or null, got object");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","url":"u"}]}]})",
               "messages[0].content[1].type: 'image' content is not supported");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages[0].content[0].text: must be a string");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]}]})",
               "messages[0].tool_calls: only assistant messages carry tool calls");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f"}},
      {"function":{"arguments":{}}}]}]})",
               "messages[1].tool_calls[1].function.name: must be a function name");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]})",
               "messages[1].tool_calls[0].function.arguments: must be an object (or JSON text), got array");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","content":"sunny"}]})",
               "messages[1].name: a tool message with string content needs the function name");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","name":"f","content":""}]})",
               "messages[1].content: a tool message needs a response");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","content":{"temp":3}}]})",
               "messages[1].content: a tool response needs 'name' and 'response' members, or a 'name' on the message");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","content":[{"name":"f","response":{}},{"temp":3}]}]})",
               "messages[1].content[1]: a tool response needs 'name' and 'response' members");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","content":{"name":"f","response":"hot"}}]})",
               "messages[1].content.response: must be an object, got string");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"},{"role":"tool","name":"f","content":7}]})",
               "messages[1].content: must be a string, an object or an array of objects, got integer");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"}],"add_generation_prompt":"yes"})",
               "add_generation_prompt: must be a boolean, got string");
  EXPECT_ERROR(R"({"messages":[{"role":"user","content":"x"}],)", "req: malformed JSON at byte");
}

TEST(RequestParsing, StructsCarryTheRequest) {
  auto req = ParseChatRequestText(R"({"tools":[{"type":"function","function":{"name":"set_lights","description":"Lights",
      "parameters":{"type":"OBJECT","properties":{"room":{"type":"string","enum":["kitchen","hall"]},
      "level":{"type":"integer","nullable":true},"tags":{"type":"array","items":{"type":"string"}},
      "where":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}},"required":["room"]}}}],
      "messages":[{"role":"system","content":[{"type":"text","text":"Sys"}]},{"role":"user","content":"Lights on"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"set_lights","arguments":{"room":"kitchen"}}}]},
      {"role":"tool","content":[{"name":"set_lights","response":{"ok":true}}]}],"add_generation_prompt":false})",
                                  "req");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  ASSERT_EQ(req->tools.size(), 1u);
  const Tool& t = req->tools[0];
  EXPECT_EQ(t.name, "set_lights");
  EXPECT_EQ(t.description, "Lights");
  ASSERT_EQ(t.parameters.properties.size(), 4u);
  EXPECT_EQ(t.parameters.properties[0].name, "room");
  EXPECT_EQ(t.parameters.properties[0].schema.enum_values.size(), 2u);
  EXPECT_TRUE(t.parameters.FindProperty("level")->nullable);
  EXPECT_EQ(t.parameters.FindProperty("tags")->items->type, SchemaType::kString);
  EXPECT_EQ(t.parameters.FindProperty("where")->required, std::vector<std::string>{"x"});
  EXPECT_EQ(t.parameters.required, std::vector<std::string>{"room"});
  EXPECT_EQ(req->FindTool("set_lights"), &req->tools[0]);
  EXPECT_EQ(req->FindTool("nope"), nullptr);
  ASSERT_EQ(req->messages.size(), 4u);
  EXPECT_EQ(req->messages[0].role, Role::kSystem);
  EXPECT_EQ(req->messages[0].text, "Sys");
  EXPECT_FALSE(req->messages[2].has_content);
  ASSERT_EQ(req->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(req->messages[2].tool_calls[0].id, "c1");
  EXPECT_EQ(req->messages[2].tool_calls[0].arguments, J(R"({"room":"kitchen"})"));
  ASSERT_EQ(req->messages[3].tool_results.size(), 1u);
  EXPECT_EQ(req->messages[3].tool_results[0].name, "set_lights");
  EXPECT_FALSE(req->add_generation_prompt);
}

TEST(RequestParsing, DuplicateToolNamesAreAcceptedWithAWarning) {
  auto req = ParseChatRequestText(R"({"tools":[{"function":{"name":"f","description":"one"}},{"function":{"name":"f","description":"two"}}],
      "messages":[{"role":"user","content":"x"}]})",
                                  "req");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  ASSERT_EQ(req->warnings.size(), 1u);
  EXPECT_NE(req->warnings[0].find("tools[1].function.name: 'f' is already declared by tools[0]"), std::string::npos);
  EXPECT_EQ(req->FindTool("f")->description, "one");
}

TEST(RequestParsing, ToolCatalogFixturesParse) {
  for (const char* name : {"chat/smart-home-tools.json", "chat/smart-home-tools-13.json"}) {
    auto text = ReadFileToString(FixturePath(name));
    ASSERT_TRUE(text.ok());
    auto tools = ParseTools(J(*text));
    ASSERT_TRUE(tools.ok()) << name << ": " << tools.status().ToString();
    EXPECT_GE(tools->size(), 6u);
  }
}

TEST(RequestParsing, OpenAIBodyDecodesArgumentsAndResolvesToolNames) {
  const std::string openai = R"({"model":"functiongemma","tools":[{"type":"function","function":{"name":"get_weather",
      "description":"Get weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
      "messages":[{"role":"user","content":"Weather in Paris?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"sun"},{"type":"text","text":"ny"}]}],"temperature":0})";
  auto req = ParseChatRequestText(openai, "body");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req->messages[1].tool_calls[0].arguments, J(R"({"city":"Paris"})"));
  EXPECT_EQ(req->messages[2].tool_results[0].name, "get_weather");
  // Renders as the equivalent Hugging Face request does.
  const std::string hf = R"({"tools":[{"type":"function","function":{"name":"get_weather","description":"Get weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
      "messages":[{"role":"user","content":"Weather in Paris?"},
      {"role":"assistant","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
      {"role":"tool","name":"get_weather","content":"sunny"}]})";
  auto want = ParseChatRequestText(hf, "hf");
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(*RenderPrompt(*req), *RenderPrompt(*want));
  // The same body read as template input keeps the string arguments (the template's 20 spaces).
  auto raw = ParseChatRequestText(openai, "body", RequestFormat::kTemplateInput);
  ASSERT_FALSE(raw.ok());  // ...and then the nameless tool message is an error, as in the template
  EXPECT_NE(raw.status().message().find("messages[2]"), std::string::npos) << raw.status().message();
}

TEST(RequestParsing, OpenAIErrorsNameTheField) {
  EXPECT_ERROR(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a",
      "function":{"name":"f","arguments":"{\"city\":"}}]}]})",
               "messages[1].tool_calls[0].function.arguments: malformed JSON at byte");
  EXPECT_ERROR(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a",
      "function":{"name":"f","arguments":"[1]"}}]}]})",
               "messages[1].tool_calls[0].function.arguments: must encode a JSON object, got array");
  EXPECT_ERROR(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"zz","content":"r"}]})",
               "messages[1].tool_call_id: 'zz' answers no earlier tool call");
}

}  // namespace
}  // namespace fgemma::test
