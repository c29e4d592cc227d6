// Limits on what a client controls in a request (issue 16, finding 3), shared by the CLI, the C API
// and the server: each refused with an error naming the field and the limit, before the work it
// bounds (100,000 tools used to take 71-87 s of pairwise name comparisons before "too many").
#include <gtest/gtest.h>

#include "chat/request.h"
#include "chat/schema.h"

namespace fgemma {
namespace {

std::string ToolJson(const std::string& name, const std::string& parameters = "") {
  return R"({"type":"function","function":{"name":")" + name + R"(","description":"d")" +
         (parameters.empty() ? "" : R"(,"parameters":)" + parameters) + "}}";
}

std::string Tools(size_t n, bool same_name = false) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += ',';
    s += ToolJson(same_name ? "f" : "f" + std::to_string(i));
  }
  return s + "]";
}

std::string Body(const std::string& tools, const std::string& messages = R"([{"role":"user","content":"hi"}])") {
  return R"({"tools":)" + tools + R"(,"messages":)" + messages + "}";
}

Status ErrorOf(const std::string& body) {
  auto req = ParseChatRequestText(body, "req");
  return req.ok() ? Status::Ok() : req.status();
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(RequestLimits, HundredThousandToolsRefusedByCount) {
  // Every tool would also be a duplicate of the first: the count is checked before any is parsed.
  Status st = ErrorOf(Body(Tools(100000, /*same_name=*/true)));
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(Contains(st.message(), "tools: 100000 functions, the limit is 1024")) << st.ToString();
  // The count comes before the first tool is looked at: a malformed first tool is not reported.
  std::string bad = "[5" + Tools(1100).substr(1, std::string::npos);
  bad.insert(2, ",");
  st = ErrorOf(Body(bad));
  EXPECT_TRUE(Contains(st.message(), "tools: 1101 functions, the limit is 1024")) << st.ToString();
}

TEST(RequestLimits, ToolCountAtTheLimitIsAccepted) {
  EXPECT_TRUE(ErrorOf(Body(Tools(kMaxTools))).ok());
  Status st = ErrorOf(Body(Tools(kMaxTools + 1)));
  EXPECT_TRUE(Contains(st.message(), "tools: 1025 functions, the limit is 1024")) << st.ToString();
  auto direct = ParseTools(ParseOrderedJson(Tools(kMaxTools + 1), "t").value(), "catalog");
  ASSERT_FALSE(direct.ok());
  EXPECT_TRUE(Contains(direct.status().message(), "catalog: 1025 functions, the limit is 1024"));
}

TEST(RequestLimits, DuplicateNamesEachPointAtTheFirst) {
  auto req = ParseChatRequestText(Body(Tools(kMaxTools, /*same_name=*/true)), "req");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  ASSERT_EQ(req->warnings.size(), kMaxTools - 1);
  EXPECT_EQ(req->warnings.back(), "tools[1023].function.name: 'f' is already declared by tools[0]; calls are checked "
                                  "against the first declaration");
  EXPECT_EQ(req->FindTool("f"), &req->tools[0]);
}

TEST(RequestLimits, SchemaDepthAndNodes) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < kMaxSchemaDepth + 1; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  Status st = ErrorOf(Body("[" + ToolJson("f", R"({"type":"object","properties":{"a":)" + deep + "}}") + "]"));
  EXPECT_TRUE(Contains(st.message(), "schema nested deeper than 32 levels")) << st.ToString();

  std::string props;
  for (size_t i = 0; i < kMaxSchemaNodes; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + R"(":{"type":"integer"})");
  st = ErrorOf(Body("[" + ToolJson("f", R"({"type":"object","properties":{)" + props + "}}") + "]"));
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(Contains(st.message(), "tools[0].function.parameters.properties.p1023: schema has more than 1024 nodes"))
      << st.ToString();

  std::string values;
  for (size_t i = 0; i < 5000; ++i) values += (i ? "," : "") + std::to_string(i);
  st = ErrorOf(Body("[" + ToolJson("f", R"({"type":"object","properties":{"n":{"type":"integer","enum":[)" + values + "]}}}") + "]"));
  EXPECT_TRUE(Contains(st.message(), "tools[0].function.parameters.properties.n.enum: schema has more than 1024 nodes"))
      << st.ToString();
  // Just under the limit parses.
  props.clear();
  for (size_t i = 0; i + 1 < kMaxSchemaNodes; ++i) props += (i ? "," : "") + ("\"p" + std::to_string(i) + R"(":{"type":"integer"})");
  EXPECT_TRUE(ErrorOf(Body("[" + ToolJson("f", R"({"type":"object","properties":{)" + props + "}}") + "]")).ok());
}

TEST(RequestLimits, MessageCountAndText) {
  std::string many = "[";
  for (size_t i = 0; i < kMaxMessages + 1; ++i) many += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
  many += "]";
  Status st = ErrorOf(Body("[]", many));
  EXPECT_TRUE(Contains(st.message(), "messages: 4097 messages, the limit is 4096")) << st.ToString();

  const std::string half(kMaxMessageBytes / 2, 'a');
  const std::string text = R"([{"role":"system","content":")" + half + R"("},{"role":"user","content":")" + half +
                           R"("},{"role":"user","content":"!"}])";
  st = ErrorOf(Body("[]", text));
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_TRUE(Contains(st.message(), "messages[2]: the messages' content reaches 1048577 bytes, the limit is 1048576"))
      << st.ToString();
  // Structured content counts too: call arguments and tool responses.
  const std::string args = R"([{"role":"system","content":")" + half + R"("},{"role":"assistant","tool_calls":[{"type":"function",)"
                           R"("function":{"name":"f","arguments":{"a":[")" + half + R"("]}}}]}])";
  st = ErrorOf(Body("[]", args));
  EXPECT_TRUE(Contains(st.message(), "messages[1]: the messages' content reaches 1048578 bytes, the limit is 1048576"))
      << st.ToString();
  const std::string response = R"([{"role":"system","content":")" + half + R"("},{"role":"tool","content":)"
                               R"({"name":"f","response":{"r":")" + half + R"("}}}])";
  st = ErrorOf(Body("[]", response));
  EXPECT_TRUE(Contains(st.message(), "messages[1]: the messages' content reaches 1048578 bytes, the limit is 1048576"))
      << st.ToString();
}

}  // namespace
}  // namespace fgemma
