// Prompt rendering against the official template: every case of renders-dev.json (rendered with
// jinja2 configured like apply_chat_template) byte for byte, the prefix/remainder split, and the
// template's quirks one by one.
#include <gtest/gtest.h>

#include "chat/jinja_values.h"
#include "chat/render.h"
#include "chat/request.h"
#include "chat_test_util.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

OrderedJson LoadRendersDev() {
  auto text = ReadFileToString(FixturePath("chat/renders-dev.json"));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto j = ParseOrderedJson(text.ok() ? *text : "[]", "renders-dev.json");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? std::move(j).value() : OrderedJson::array();
}

RenderOptions OptionsFor(const OrderedJson& c) {
  RenderOptions o;
  o.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  return o;
}

TEST(RenderDev, EveryCaseIsByteIdentical) {
  const OrderedJson cases = LoadRendersDev();
  ASSERT_EQ(cases.size(), 120u);
  size_t matched = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    auto req = ParseChatRequest(c, RequestFormat::kTemplateInput);
    ASSERT_TRUE(req.ok()) << "case " << i << ": " << req.status().ToString();
    auto prompt = RenderPrompt(*req, OptionsFor(c));
    ASSERT_TRUE(prompt.ok()) << "case " << i << ": " << prompt.status().ToString();
    const std::string want = c.at("expected").get<std::string>();
    EXPECT_EQ(*prompt, want) << "case " << i << ": " << FirstDifference(want, *prompt);
    matched += *prompt == want;
  }
  std::printf("renders-dev: %zu of %zu cases byte-identical\n", matched, cases.size());
  EXPECT_EQ(matched, cases.size());
}

TEST(RenderDev, PrefixPlusRemainderIsTheFullRender) {
  const OrderedJson cases = LoadRendersDev();
  size_t with_tools = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (!c.contains("tools") || c["tools"].is_null() || c["tools"].empty()) continue;
    ++with_tools;
    auto req = ParseChatRequest(c, RequestFormat::kTemplateInput);
    ASSERT_TRUE(req.ok()) << req.status().ToString();
    auto prefix = RenderCatalogPrefix(*req, OptionsFor(c));
    auto remainder = RenderRemainder(*req, OptionsFor(c));
    ASSERT_TRUE(prefix.ok() && remainder.ok()) << "case " << i;
    EXPECT_EQ(*prefix + *remainder, c["expected"].get<std::string>()) << "case " << i;
    // The prefix is the whole developer turn: every declaration, closed by <end_of_turn>.
    EXPECT_EQ(prefix->rfind("<end_of_turn>\n"), prefix->size() - 14) << "case " << i;
    size_t declarations = 0;
    for (size_t at = prefix->find("<start_function_declaration>"); at != std::string::npos;
         at = prefix->find("<start_function_declaration>", at + 1))
      ++declarations;
    EXPECT_EQ(declarations, c["tools"].size()) << "case " << i;
    // The remainder starts a turn, so the token boundary is a special token.
    if (!remainder->empty()) EXPECT_EQ(remainder->rfind("<start_of_turn>", 0), 0u) << "case " << i;
    auto parts = RenderPromptParts(*req, OptionsFor(c));
    ASSERT_TRUE(parts.ok());
    EXPECT_EQ(parts->prefix, *prefix);
    EXPECT_EQ(parts->remainder, *remainder);
  }
  std::printf("prefix + remainder checked on %zu cases with tools\n", with_tools);
  EXPECT_GT(with_tools, 100u);
}

TEST(RenderDev, PrefixDependsOnlyOnToolsAndDeveloperMessage) {
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"f","description":"d",
      "parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}])");
  const OrderedJson a = {{"tools", tools}, {"messages", J(R"([{"role":"developer","content":"D"},{"role":"user","content":"one"}])")}};
  const OrderedJson b = {{"tools", tools}, {"messages", J(R"([{"role":"developer","content":"D"},{"role":"user","content":"two"},
      {"role":"assistant","content":"ok"},{"role":"user","content":"three"}])")}};
  auto ra = ParseChatRequest(a), rb = ParseChatRequest(b);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(*RenderCatalogPrefix(*ra), *RenderCatalogPrefix(*rb));
  EXPECT_EQ(*RenderRemainder(*ra), "<start_of_turn>user\none<end_of_turn>\n<start_of_turn>model\n");
}

TEST(Render, NoToolsNoSystemHasNoDeveloperTurn) {
  auto p = RenderRequest(nullptr, J(R"([{"role":"user","content":"hi"}])"), true);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
  auto req = ParseChatRequest(J(R"({"messages":[{"role":"user","content":"hi"}]})"));
  ASSERT_TRUE(req.ok());
  EXPECT_EQ(*RenderCatalogPrefix(*req), "<bos>");
}

TEST(Render, EmptyBosForTokenizersThatAddIt) {
  auto p = RenderRequest(nullptr, J(R"([{"role":"user","content":"hi"}])"), false, TemplateKind::kOfficial, "");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "<start_of_turn>user\nhi<end_of_turn>\n");
}

// Each quirk below was confirmed against jinja2 with Hugging Face's settings.
TEST(RenderQuirks, DescriptionAlwaysPrintedAndEnumOnlyForStrings) {
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"t",
      "parameters":{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]},"s":{"type":"string","enum":["a","b"]}}}}}])");
  auto p = RenderRequest(tools, J(R"([{"role":"user","content":"x"}])"), false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->find("declaration:t{description:<escape><escape>,parameters:{properties:{n:{description:<escape><escape>,"
                    "type:<escape>INTEGER<escape>},s:{description:<escape><escape>,enum:[<escape>a<escape>,<escape>b<escape>],"
                    "type:<escape>STRING<escape>}},type:<escape>OBJECT<escape>}}"),
            std::string::npos)
      << *p;
}

TEST(RenderQuirks, KeysSortCaseInsensitivelyWithStableTies) {
  // dictsort lowercases keys (Python str.lower, Unicode-aware) and keeps equal keys in given order.
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"t","description":"d",
      "parameters":{"type":"object","properties":{"b":{"type":"string"},"Beta":{"type":"string"},"B":{"type":"string"},
      "alpha":{"type":"string"},"État":{"type":"string"},"zeta":{"type":"string"},"Имя":{"type":"string"},"адрес":{"type":"string"}}}}}])");
  auto p = RenderRequest(tools, J(R"([{"role":"user","content":"x"}])"), false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<std::string> order;
  for (const char* k : {"alpha:", "b:", "B:", "Beta:", "zeta:", "État:", "адрес:", "Имя:"}) {
    const size_t at = p->find(std::string("{") + k) != std::string::npos ? p->find(std::string("{") + k)
                                                                          : p->find(std::string(",") + k);
    ASSERT_NE(at, std::string::npos) << k;
    order.push_back(std::to_string(at));
  }
  for (size_t i = 1; i < order.size(); ++i) EXPECT_LT(std::stoul(order[i - 1]), std::stoul(order[i])) << i;
}

TEST(RenderQuirks, ValuesPrintLikePython) {
  const OrderedJson messages = J(R"([{"role":"user","content":"go"},
      {"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":
        {"i":-3,"big":1e16,"small":0.00001,"f":2.0,"t":true,"n":null,"s":"a,b}","nested":{"Key":[1,{"x":false}]}}}}]},
      {"role":"tool","name":"f","content":{"ok":true,"v":0.1}}])");
  auto p = RenderRequest(nullptr, messages, true);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p,
            "<bos><start_of_turn>user\ngo<end_of_turn>\n<start_of_turn>model\n<start_function_call>call:f{big:1e+16,f:2.0,i:-3,"
            "n:None,nested:{Key:[1,{x:false}]},s:<escape>a,b}<escape>,small:1e-05,t:true}<end_function_call>"
            "<start_function_response>response:f{ok:true,v:0.1}<end_function_response>");
}

TEST(RenderQuirks, NoTurnHeaderAfterToolResponseAndNoGenerationPrompt) {
  const OrderedJson messages = J(R"([{"role":"user","content":"Weather?"},
      {"role":"assistant","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
      {"role":"tool","name":"get_weather","content":"Sunny"}])");
  OrderedJson longer = messages;
  longer.push_back(J(R"({"role":"user","content":"And London?"})"));
  auto p = RenderRequest(nullptr, longer, true);
  ASSERT_TRUE(p.ok());
  // A user message right after a tool response gets no <start_of_turn>user header.
  EXPECT_TRUE(p->ends_with("<end_function_response>And London?<end_of_turn>\n<start_of_turn>model\n")) << *p;
  p = RenderRequest(nullptr, messages, true);
  ASSERT_TRUE(p.ok());
  // Nor is a generation prompt added after a tool response: the model continues its own turn.
  EXPECT_TRUE(p->ends_with("<start_function_response>response:get_weather{value:<escape>Sunny<escape>}<end_function_response>"))
      << *p;
}

TEST(RenderQuirks, TrailingToolCallOpensTheResponseThenTheModelTurn) {
  const OrderedJson messages = J(R"([{"role":"user","content":"Hi"},
      {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]}])");
  auto without = RenderRequest(nullptr, messages, false);
  auto with = RenderRequest(nullptr, messages, true);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_TRUE(without->ends_with("<start_function_call>call:f{}<end_function_call><start_function_response>"));
  EXPECT_TRUE(with->ends_with("<end_function_call><start_function_response><start_of_turn>model\n"));
}

TEST(RenderQuirks, StringArgumentsArePrintedAfterTwentySpaces) {
  const OrderedJson messages = J(R"([{"role":"user","content":"Hi"},
      {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\": 1}"}}]},
      {"role":"tool","name":"f","content":"done"}])");
  auto p = RenderRequest(nullptr, messages, false);
  ASSERT_TRUE(p.ok());
  EXPECT_NE(p->find("call:f{                    {\"a\": 1}}<end_function_call>"), std::string::npos) << *p;
}

TEST(RenderQuirks, ContentIsTrimmedWithUnicodeWhitespace) {
  auto p = RenderRequest(nullptr, J("[{\"role\":\"system\",\"content\":\"\\u3000 sys \\u00a0\\n\"},"
                                    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\" a \"},{\"type\":\"text\",\"text\":\"b\\u2028\"}]}]"),
                         false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "<bos><start_of_turn>developer\nsys<end_of_turn>\n<start_of_turn>user\nab<end_of_turn>\n");
}

TEST(RenderQuirks, LaterSystemMessageKeepsItsRole) {
  auto p = RenderRequest(nullptr, J(R"([{"role":"user","content":"a"},{"role":"system","content":"b"}])"), false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, "<bos><start_of_turn>user\na<end_of_turn>\n<start_of_turn>system\nb<end_of_turn>\n");
}

TEST(RenderQuirks, ArrayItemsPrintEveryKey) {
  // In `items`, keys other than properties/required/type go through format_argument with escaped
  // keys, and a nested `items` keeps its lower-case type.
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"t","description":"d","parameters":{"type":"object",
      "properties":{"m":{"type":"array","description":"M","items":{"type":"array","description":"inner","items":{"type":"integer"}}}}}}}])");
  auto p = RenderRequest(tools, J(R"([{"role":"user","content":"x"}])"), false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->find("m:{description:<escape>M<escape>,items:{description:<escape>inner<escape>,items:{<escape>type<escape>:"
                    "<escape>integer<escape>},type:<escape>ARRAY<escape>},type:<escape>ARRAY<escape>}"),
            std::string::npos)
      << *p;
}

TEST(RenderQuirks, RawInputRendersWhatValidationRejects) {
  // Parameters without a type never close their brace; a property named `type` disappears; a
  // numeric enum on a string prints bare. The validated path rejects these requests.
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"t","description":"d","parameters":{
      "properties":{"type":{"type":"string"},"s":{"type":"string","enum":[1,2]}}}}}])");
  const OrderedJson messages = J(R"([{"role":"user","content":"x"}])");
  auto parts = RenderTemplateJson(tools, messages, {});
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_NE(parts->prefix.find("declaration:t{description:<escape>d<escape>,parameters:{properties:{s:{description:<escape>"
                               "<escape>,enum:[1,2],type:<escape>STRING<escape>}},}<end_function_declaration>"),
            std::string::npos)
      << parts->prefix;
  OrderedJson body = {{"tools", tools}, {"messages", messages}};
  EXPECT_FALSE(ParseChatRequest(body).ok());
}

TEST(RenderQuirks, ListsAndDictsPrintAsPythonStr) {
  // Expected: Python 3's str() of the same list.
  const OrderedJson v = J(R"(["it's", "a\"b", "both'\"", "back\\slash\n\t\u0001\u007f", 1, 2.5, 1e-05, true, null,
      {"k": [1, "v"]}, []])");
  auto text = jinja::Str(&v);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, R"(["it's", 'a"b', 'both\'"', 'back\\slash\n\t\x01\x7f', 1, 2.5, 1e-05, True, None, {'k': [1, 'v']}, []])");
  const OrderedJson non_ascii = J(R"(["é"])");
  EXPECT_FALSE(jinja::Str(&non_ascii).ok());  // Python's printability rules are not reproduced: refused
}

TEST(RenderQuirks, TypeListsPrintAsPythonDoesThem) {
  // The template upper-cases a property's `type`; for a list Jinja prints Python's str() of it.
  // Expected text rendered by jinja2 3.1.6 (trim_blocks, lstrip_blocks, as apply_chat_template).
  const OrderedJson tools = J(R"([{"type":"function","function":{"name":"set_level","description":"Set it","parameters":{
      "type":"object","properties":{"level":{"type":["integer","null"],"description":"L"},
      "mode":{"type":"string","enum":["a","it's"]},"opt":{"type":["string","number"]}},"required":["level"]}}}])");
  auto p = RenderRequest(tools, J(R"([{"role":"user","content":"hi"}])"), true);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p,
            "<bos><start_of_turn>developer\n<start_function_declaration>declaration:set_level{description:<escape>Set it<escape>,"
            "parameters:{properties:{level:{description:<escape>L<escape>,type:<escape>['INTEGER', 'NULL']<escape>},"
            "mode:{description:<escape><escape>,enum:[<escape>a<escape>,<escape>it's<escape>],type:<escape>STRING<escape>},"
            "opt:{description:<escape><escape>,type:<escape>['STRING', 'NUMBER']<escape>}},required:[<escape>level<escape>],"
            "type:<escape>OBJECT<escape>}}<end_function_declaration><end_of_turn>\n<start_of_turn>user\nhi<end_of_turn>\n"
            "<start_of_turn>model\n");
}

TEST(RenderQuirks, TemplateErrorsAreErrors) {
  // raise_exception paths of the template, reached through unvalidated JSON.
  const RenderOptions o;
  EXPECT_FALSE(RenderTemplateJson(nullptr, J(R"([{"role":"tool","content":"x"}])"), o).ok());
  EXPECT_FALSE(RenderTemplateJson(nullptr, J(R"([{"role":"tool","content":{"a":1}}])"), o).ok());
  EXPECT_FALSE(RenderTemplateJson(nullptr, J(R"([{"role":"tool","content":[1]}])"), o).ok());
  EXPECT_FALSE(RenderTemplateJson(nullptr, J(R"([{"role":"user","content":5}])"), o).ok());
  EXPECT_FALSE(RenderTemplateJson(nullptr, J(R"([])"), o).ok());
  EXPECT_FALSE(RenderTemplateJson(J(R"([{"type":"function"}])"), J(R"([{"role":"user","content":"x"}])"), o).ok());
}

}  // namespace
}  // namespace fgemma::test
