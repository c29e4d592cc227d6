// `fgemma render` end to end.
#include <gtest/gtest.h>

#include "chat_test_util.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

std::string WriteRequest(const OrderedJson& body) {
  const std::string path = TempDir() + "/request.json";
  EXPECT_TRUE(WriteStringToFile(path, body.dump()).ok());
  return path;
}

TEST(CliRender, PrintsTheExactPrompt) {
  auto text = ReadFileToString(FixturePath("chat/renders-dev.json"));
  ASSERT_TRUE(text.ok());
  const OrderedJson cases = J(*text);
  for (size_t i : {size_t{0}, size_t{5}, size_t{119}}) {
    const std::string path = WriteRequest(cases[i]);
    std::string out;
    ASSERT_EQ(RunCommand(CliPath() + " render --request " + path, &out), 0) << i;
    EXPECT_EQ(out, cases[i]["expected"].get<std::string>()) << i << ": " << FirstDifference(cases[i]["expected"], out);
  }
}

TEST(CliRender, GenerationPromptFlagAndModelOption) {
  const std::string path = WriteRequest(J(R"({"messages":[{"role":"user","content":"hi"}]})"));
  std::string with, without;
  ASSERT_EQ(RunCommand(CliPath() + " render --request " + path + " --model /nonexistent/model", &with), 0);
  EXPECT_EQ(with, "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
  ASSERT_EQ(RunCommand(CliPath() + " render --no-generation-prompt --request " + path, &without), 0);
  EXPECT_EQ(without, "<bos><start_of_turn>user\nhi<end_of_turn>\n");
}

TEST(CliRender, OpenAIBodyAndTemplateVariant) {
  const std::string path = WriteRequest(J(R"({"model":"fg","tools":[{"type":"function","function":{"name":"f","description":"d"}}],
      "messages":[{"role":"user","content":"hi"}]})"));
  std::string out;
  ASSERT_EQ(RunCommand(CliPath() + " render --request " + path + " --chat-template " +
                           FixturePath("chat/chat_template.variant-default-preamble.jinja"),
                       &out),
            0);
  EXPECT_EQ(out, "<bos><start_of_turn>developer\nYou are a model that can do function calling with the following functions"
                 "<start_function_declaration>declaration:f{description:<escape>d<escape>}<end_function_declaration>"
                 "<end_of_turn>\n<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(CliRender, ErrorsNameTheFieldAndExitNonZero) {
  const std::string path = WriteRequest(J(R"({"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",
      "properties":{"room":{"type":"null"}}}}}],"messages":[{"role":"user","content":"hi"}]})"));
  std::string out;
  EXPECT_EQ(RunCommand(CliPath() + " render --request " + path + " 2>&1", &out), 1);
  EXPECT_NE(out.find("tools[0].function.parameters.properties.room.type: unsupported type 'null'"), std::string::npos) << out;
  out.clear();
  const std::string bad_template = TempDir() + "/t.jinja";
  ASSERT_TRUE(WriteStringToFile(bad_template, "{{ messages }}").ok());
  EXPECT_EQ(RunCommand(CliPath() + " render --request " + path + " --chat-template " + bad_template + " 2>&1", &out), 1);
  EXPECT_NE(out.find("unsupported chat template"), std::string::npos) << out;
}

// Issue 16: the CLI shares the request limits (finding 3) and reads only regular files (finding 6:
// a FIFO given as the request must not hang the process; `timeout` turns a hang into exit 124).
TEST(CliRender, LimitsAndNonRegularFiles) {
  std::string tools;
  for (int i = 0; i < 100000; ++i) tools += std::string(i ? "," : "") + R"({"type":"function","function":{"name":"f"}})";
  const std::string path = WriteRequest(J(R"({"tools":[)" + tools + R"(],"messages":[{"role":"user","content":"hi"}]})"));
  std::string out;
  EXPECT_EQ(RunCommand(CliPath() + " render --request " + path + " 2>&1", &out), 1);
  EXPECT_NE(out.find("tools: 100000 functions, the limit is 1024"), std::string::npos) << out;
  out.clear();
  const std::string fifo = TempDir() + "/fifo.json";
  ASSERT_EQ(RunCommand("mkfifo " + fifo), 0);
  EXPECT_EQ(RunCommand("timeout 20 " + CliPath() + " render --request " + fifo + " 2>&1", &out), 1);
  EXPECT_NE(out.find(fifo + ": is not a regular file"), std::string::npos) << out;
}

}  // namespace
}  // namespace fgemma::test
