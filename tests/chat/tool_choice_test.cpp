// tool_choice from an OpenAI body, read in place (the server and the C API's call_openai share it):
// absent is auto, the words and the function object select their modes, an unknown name is refused
// naming it, and the ordered and plain JSON readings agree.
#include <gtest/gtest.h>

#include "chat/call_grammar.h"
#include "chat/request.h"

namespace fgemma {
namespace {

class ToolChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tools = ParseTools(OrderedJson::parse(R"([
      {"type":"function","function":{"name":"set_lights","description":"d","parameters":{"type":"object","properties":{}}}},
      {"type":"function","function":{"name":"play_music","description":"d"}}])"));
    ASSERT_TRUE(tools.ok()) << tools.status().ToString();
    tools_ = std::move(tools).value();
  }
  Result<ToolChoice> FromBody(const std::string& body) { return ToolChoiceOfBody(OrderedJson::parse(body), tools_); }
  std::vector<Tool> tools_;
};

TEST_F(ToolChoiceTest, BodyMembersSelectTheMode) {
  EXPECT_EQ(FromBody(R"({"model":"m"})")->mode, ToolChoiceMode::kAuto);
  EXPECT_EQ(FromBody(R"({"tool_choice":null})")->mode, ToolChoiceMode::kAuto);
  EXPECT_EQ(FromBody(R"({"tool_choice":"auto"})")->mode, ToolChoiceMode::kAuto);
  EXPECT_EQ(FromBody(R"({"tool_choice":"required"})")->mode, ToolChoiceMode::kRequired);
  EXPECT_EQ(FromBody(R"({"tool_choice":"any"})")->mode, ToolChoiceMode::kRequired);
  EXPECT_EQ(FromBody(R"({"tool_choice":"none"})")->mode, ToolChoiceMode::kNone);
  auto named = FromBody(R"({"tool_choice":{"type":"function","function":{"name":"play_music"}}})");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->mode, ToolChoiceMode::kFunction);
  EXPECT_EQ(named->function, "play_music");
  auto bare = FromBody(R"({"tool_choice":"set_lights"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->mode, ToolChoiceMode::kFunction);
  EXPECT_EQ(bare->function, "set_lights");
}

TEST_F(ToolChoiceTest, BadValuesAreRefusedNamingTheField) {
  auto unknown = FromBody(R"({"tool_choice":{"type":"function","function":{"name":"open_pod_bay_doors"}}})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "tool_choice: unknown tool 'open_pod_bay_doors' (not in tools)");
  auto shape = FromBody(R"({"tool_choice":{"type":"function"}})");
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().message().rfind("tool_choice: expected", 0), 0u) << shape.status().message();
  auto number = FromBody(R"({"tool_choice":7})");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message().rfind("tool_choice: expected", 0), 0u) << number.status().message();
}

TEST_F(ToolChoiceTest, OrderedAndPlainJsonAgree) {
  for (const char* text : {R"("auto")", R"("required")", R"("none")", R"("play_music")", R"("nope")",
                           R"({"function":{"name":"set_lights"},"type":"function"})", "null", "[1]"}) {
    SCOPED_TRACE(text);
    auto ordered = ParseToolChoice(OrderedJson::parse(text), tools_);
    auto plain = ParseToolChoice(Json::parse(text), tools_);
    ASSERT_EQ(ordered.ok(), plain.ok());
    if (!ordered.ok()) {
      EXPECT_EQ(ordered.status().message(), plain.status().message());
      continue;
    }
    EXPECT_EQ(ordered->mode, plain->mode);
    EXPECT_EQ(ordered->function, plain->function);
  }
}

}  // namespace
}  // namespace fgemma
