// Renders published by Google and others (fixtures chat/published-examples.md), read from the
// markdown itself: inline `tools` / `messages` JSON and ```json string blocks per section.
#include <gtest/gtest.h>

#include <map>

#include "chat/render.h"
#include "chat/request.h"
#include "chat_test_util.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

struct Section {
  std::string body;
  OrderedJson tools, messages;
  bool add_generation_prompt = false;
  std::vector<std::string> blocks;  // the ```json string literals, decoded
};

// The JSON between the backticks that follow `label` on its line.
OrderedJson InlineJson(const std::string& body, const std::string& label) {
  const size_t at = body.find(label);
  if (at == std::string::npos) return OrderedJson();
  const size_t open = body.find('`', at);
  const size_t close = body.find('`', open + 1);
  return J(body.substr(open + 1, close - open - 1));
}

std::map<std::string, Section> LoadSections() {
  auto md = ReadFileToString(FixturePath("chat/published-examples.md"));
  EXPECT_TRUE(md.ok()) << md.status().ToString();
  std::map<std::string, Section> out;
  if (!md.ok()) return out;
  const std::string& text = *md;
  size_t pos = 0;
  while ((pos = text.find("\n#", pos)) != std::string::npos) {
    const size_t id_start = text.find(' ', pos) + 1;
    const size_t id_end = text.find_first_of(" .", id_start);
    const std::string id = text.substr(id_start, id_end - id_start);
    size_t end = text.find("\n#", pos + 1);
    if (end == std::string::npos) end = text.size();
    Section s;
    s.body = text.substr(pos, end - pos);
    s.tools = s.body.find("tools=`") != std::string::npos ? InlineJson(s.body, "tools=`") : InlineJson(s.body, "\n- tools");
    s.messages = s.body.find("messages=`") != std::string::npos ? InlineJson(s.body, "messages=`") : InlineJson(s.body, "\n- messages");
    s.add_generation_prompt = s.body.find("add_generation_prompt: True") != std::string::npos ||
                              s.body.find("add_generation_prompt=True") != std::string::npos;
    for (size_t b = s.body.find("```json\n"); b != std::string::npos; b = s.body.find("```json\n", b + 1)) {
      const size_t start = b + 8, stop = s.body.find("\n```", start);
      s.blocks.push_back(J(s.body.substr(start, stop - start)).get<std::string>());
    }
    out[id] = std::move(s);
    pos = end;
  }
  return out;
}

class PublishedExamples : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sections_ = new std::map<std::string, Section>(LoadSections()); }
  static void TearDownTestSuite() { delete sections_; }
  const Section& S(const std::string& id) {
    EXPECT_TRUE(sections_->count(id)) << id;
    return (*sections_)[id];
  }
  static OrderedJson Head(const OrderedJson& messages, size_t n) {
    OrderedJson out = OrderedJson::array();
    for (size_t i = 0; i < n && i < messages.size(); ++i) out.push_back(messages[i]);
    return out;
  }
  static std::map<std::string, Section>* sections_;
};
std::map<std::string, Section>* PublishedExamples::sections_ = nullptr;

void ExpectRender(const Result<std::string>& got, const std::string& want, const std::string& what) {
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  EXPECT_EQ(*got, want) << what << ": " << FirstDifference(want, *got);
}

TEST_F(PublishedExamples, E1FullSequenceAndFirstTurn) {
  const Section& s = S("E1");
  ASSERT_EQ(s.blocks.size(), 1u);
  ExpectRender(RenderRequest(s.tools, s.messages, false), s.blocks[0], "E1 full");
  const std::string& full = s.blocks[0];
  const std::string turn1 = full.substr(0, full.find("<start_of_turn>model\n") + 21);
  ExpectRender(RenderRequest(s.tools, Head(s.messages, 2), true), turn1, "E1 turn 1");
}

TEST_F(PublishedExamples, E2TrailingToolCall) {
  const Section& s = S("E2");
  ExpectRender(RenderRequest(s.tools, s.messages, false), s.blocks.at(0), "E2");
}

TEST_F(PublishedExamples, E3AndE4MobileActionsPromptAndCompletion) {
  for (const char* id : {"E3", "E4"}) {
    const Section& s = S(id);
    ASSERT_EQ(s.blocks.size(), 2u) << id;
    ExpectRender(RenderRequest(s.tools, Head(s.messages, s.messages.size() - 1), true), s.blocks[0], std::string(id) + " prompt");
    auto full = RenderRequest(s.tools, s.messages, false);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    EXPECT_EQ(full->substr(s.blocks[0].size()), s.blocks[1]) << id << " completion";
  }
}

TEST_F(PublishedExamples, E6JsonSchemaTool) {
  const Section& s = S("E6");
  ExpectRender(RenderRequest(s.tools, s.messages, true), s.blocks.at(0), "E6");
}

TEST_F(PublishedExamples, E7DefaultPreambleVariantWithStringArguments) {
  const Section& s = S("E7");
  const std::string& want = s.blocks.at(0);
  ExpectRender(RenderRequest(s.tools, s.messages, true, TemplateKind::kDefaultPreamble), want, "E7 variant B");
  // The official template differs only by the missing preamble.
  std::string official = want;
  official.erase(official.find(kDefaultDeveloperPreamble), kDefaultDeveloperPreamble.size());
  ExpectRender(RenderRequest(s.tools, s.messages, true), official, "E7 official");
}

TEST_F(PublishedExamples, E9GgufPromptWithoutBos) {
  const Section& s = S("E9");
  const OrderedJson with_developer = J(R"([{"role":"developer","content":"You are a model that can do function calling with the following functions"},
      {"role":"user","content":"What's the weather in Paris?"}])");
  ExpectRender(RenderRequest(s.tools, with_developer, true, TemplateKind::kOfficial, ""), s.blocks.at(0), "E9 official");
  ExpectRender(RenderRequest(s.tools, J(R"([{"role":"user","content":"What's the weather in Paris?"}])"), true,
                             TemplateKind::kDefaultPreamble, ""),
               s.blocks.at(0), "E9 variant without developer message");
}

TEST_F(PublishedExamples, ComputedC1ToC6) {
  for (const char* id : {"C1", "C2", "C3", "C4", "C5", "C6"}) {
    const Section& s = S(id);
    ExpectRender(RenderRequest(s.tools, s.messages, s.add_generation_prompt), s.blocks.at(0), id);
  }
}

TEST_F(PublishedExamples, E8FlutterGemmaFragments) {
  auto render_properties = [](const std::string& properties, const std::string& required) {
    const OrderedJson tools = J(R"([{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object","properties":)" +
                                properties + (required.empty() ? "" : R"(,"required":)" + required) + "}}}]");
    auto parts = RenderTemplateJson(tools, J(R"([{"role":"user","content":"x"}])"), {});
    EXPECT_TRUE(parts.ok()) << parts.status().ToString();
    return parts.ok() ? parts->prefix : std::string();
  };
  EXPECT_NE(render_properties(R"({"zebra":{"type":"string","description":"z"},"apple":{"type":"string","description":"a"}})", "")
                .find("declaration:t{description:<escape>d<escape>,parameters:{properties:{apple:{description:<escape>a<escape>,"
                      "type:<escape>STRING<escape>},zebra:{description:<escape>z<escape>,type:<escape>STRING<escape>}},type:"
                      "<escape>OBJECT<escape>}}"),
            std::string::npos);
  EXPECT_NE(render_properties(R"({"exts":{"type":"array","description":"e","items":{"type":"string"}}})", "")
                .find("exts:{description:<escape>e<escape>,items:{type:<escape>STRING<escape>},type:<escape>ARRAY<escape>}"),
            std::string::npos);
  EXPECT_NE(render_properties(R"({"o":{"type":"object","description":"obj","properties":{"b":{"type":"string","description":"B"},
      "a":{"type":"string","description":"A"}},"required":["a"]}})", "")
                .find("o:{description:<escape>obj<escape>,properties:{a:{description:<escape>A<escape>,type:<escape>STRING<escape>},"
                      "b:{description:<escape>B<escape>,type:<escape>STRING<escape>}},required:[<escape>a<escape>],type:<escape>"
                      "OBJECT<escape>}"),
            std::string::npos);
  EXPECT_NE(render_properties(R"({"s":{"type":"string","description":"s","enum":[1,2]}})", "").find("enum:[1,2]"), std::string::npos);
  EXPECT_EQ(render_properties(R"({"n":{"type":"number","enum":[1,2]}})", "").find("enum:"), std::string::npos);
  EXPECT_NE(render_properties(R"({"type":{"type":"string","description":"x"},"ok":{"type":"string","description":"y"}})", "")
                .find("properties:{ok:{description:<escape>y<escape>,type:<escape>STRING<escape>}}"),
            std::string::npos);
  const std::string mixed = render_properties(R"({"Beta":{"type":"string"},"alpha":{"type":"string"}})", "");
  EXPECT_LT(mixed.find("alpha:"), mixed.find("Beta:"));
}

TEST_F(PublishedExamples, E10DinjaAndLlamadartFragments) {
  auto p = RenderRequest(J(R"([{"function":{"name":"get_weather","description":"Description","parameters":{"type":"object",
      "properties":{"loc":{"type":"string","description":"Location"}},"required":["loc"]}}}])"),
                         J(R"([{"role":"user","content":"Weather in London?"},
      {"role":"assistant","tool_calls":[{"function":{"name":"get_weather","arguments":{"loc":"London"}}}]}])"),
                         false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->find("properties:{loc:{description:<escape>Location<escape>,type:<escape>STRING<escape>}}"), std::string::npos);
  EXPECT_NE(p->find("<start_function_call>call:get_weather{loc:<escape>London<escape>}"), std::string::npos);
  auto q = RenderRequest(J(R"([{"function":{"name":"w","parameters":{"type":"object","properties":{"unit":{"type":"string",
      "enum":["celsius","fahrenheit"]}}}}}])"),
                         J(R"([{"role":"user","content":"x"}])"), true);
  ASSERT_TRUE(q.ok());
  EXPECT_NE(q->find("enum:[<escape>celsius<escape>,<escape>fahrenheit<escape>]"), std::string::npos);
}

}  // namespace
}  // namespace fgemma::test
