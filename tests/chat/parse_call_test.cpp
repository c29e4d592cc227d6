// Parsing model output into calls: published outputs, hand-written and adversarial ones.
#include <gtest/gtest.h>

#include <random>

#include "chat/parse_call.h"
#include "chat/request.h"
#include "chat_test_util.h"

namespace fgemma::test {
namespace {

std::vector<Tool> Tools() {
  auto tools = ParseTools(J(R"([
    {"type":"function","function":{"name":"set_lights","description":"Lights","parameters":{"type":"object","properties":{
      "room":{"type":"string","enum":["kitchen","living room"]},"on":{"type":"boolean"},"level":{"type":"integer"},
      "zip":{"type":"string"},"ratio":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}},
      "color":{"type":"object","properties":{"r":{"type":"integer"},"name":{"type":"string"}},"required":["r"]},
      "note":{"type":"string","nullable":true}},"required":["room","on"]}}},
    {"type":"function","function":{"name":"get_time","description":"Time","parameters":{"type":"object","properties":{}}}},
    {"type":"function","function":{"name":"search","description":"Search","parameters":{"type":"object","properties":{
      "query":{"type":"string"}},"required":["query"]}}}])"));
  EXPECT_TRUE(tools.ok()) << tools.status().ToString();
  return tools.ok() ? *tools : std::vector<Tool>{};
}

constexpr const char* kSet = "<start_function_call>call:set_lights";
constexpr const char* kEnd = "<end_function_call>";

TEST(ParseCall, PublishedOutputs) {
  // E1 / E6 (skip_special_tokens output), E2 (two calls, then <start_function_response>), E5 (base
  // model, arguments not sorted).
  auto a = ParseModelOutput("<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>}<end_function_call>");
  ASSERT_TRUE(a.ok()) << a.ErrorSummary();
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0].name, "get_current_weather");
  EXPECT_EQ(a.calls[0].arguments, Json::parse(R"({"location":"Tokyo, Japan"})"));
  EXPECT_FALSE(a.ended_turn);

  auto b = ParseModelOutput(
      "<start_function_call>call:search_knowledge_base{query:<escape>Floor plan for Building B<escape>}<end_function_call>"
      "<start_function_call>call:search_google{query:<escape>Floor plan for Building B<escape>}<end_function_call>"
      "<start_function_response>");
  ASSERT_TRUE(b.ok()) << b.ErrorSummary();
  ASSERT_EQ(b.calls.size(), 2u);
  EXPECT_EQ(b.calls[1].name, "search_google");
  EXPECT_TRUE(b.ended_turn);
  EXPECT_EQ(b.text, "");

  auto c = ParseModelOutput(
      "<start_function_call>call:send_email{body:<escape>The details of the event below.<escape>,to:<escape>mateo.silva@"
      "techglobal.net<escape>,subject:<escape>Sync Up Reminder<escape>}<end_function_call>");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.calls[0].arguments["subject"], "Sync Up Reminder");
  EXPECT_EQ(c.calls[0].arguments.size(), 3u);
}

TEST(ParseCall, PlainTextAnswer) {
  auto p = ParseModelOutput("I cannot assist with accessing paystubs.<end_of_turn>", Tools());
  EXPECT_TRUE(p.ok());
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.text, "I cannot assist with accessing paystubs.");
  EXPECT_TRUE(p.ended_turn);
  auto q = ParseModelOutput("no end marker, still text");
  EXPECT_TRUE(q.ok());
  EXPECT_EQ(q.text, "no end marker, still text");
}

TEST(ParseCall, TextAroundCalls) {
  auto p = ParseModelOutput(std::string("Sure, turning them on. ") + kSet + "{on:true,room:<escape>kitchen<escape>}" + kEnd +
                                " Done.<end_of_turn>ignored after the turn",
                            Tools());
  ASSERT_TRUE(p.ok()) << p.ErrorSummary();
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.text, "Sure, turning them on.  Done.");
  EXPECT_EQ(p.calls[0].offset, 23u);
  EXPECT_EQ(p.calls[0].raw, std::string(kSet) + "{on:true,room:<escape>kitchen<escape>}" + kEnd);
}

TEST(ParseCall, EscapedStringsHideBracesCommasAndMarkers) {
  auto p = ParseModelOutput(std::string(kSet) + "{on:false,room:<escape>kitchen<escape>,zip:<escape>a,b}{c:d[e]<end_function_call>"
                                                "<end_of_turn>\"q\"<escape>}" + kEnd,
                            Tools());
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments["zip"], "a,b}{c:d[e]<end_function_call><end_of_turn>\"q\"");
  EXPECT_TRUE(p.calls[0].ok()) << p.ErrorSummary();
}

TEST(ParseCall, UnicodeInStrings) {
  auto p = ParseModelOutput(std::string(kSet) + "{on:true,room:<escape>kitchen<escape>,note:<escape>Zürich 東京 🙂\n<escape>}" + kEnd,
                            Tools());
  ASSERT_TRUE(p.ok()) << p.ErrorSummary();
  EXPECT_EQ(p.calls[0].arguments["note"], "Zürich 東京 🙂\n");
}

TEST(ParseCall, EmptyArgumentsAndNestedValues) {
  auto p = ParseModelOutput("<start_function_call>call:get_time{}<end_function_call>" + std::string(kSet) +
                                "{color:{name:<escape>warm<escape>,r:255},level:-3,on:true,ratio:1e-05,room:<escape>living room<escape>,"
                                "tags:[<escape>a<escape>,<escape>b<escape>],note:None}" + kEnd,
                            Tools());
  ASSERT_TRUE(p.ok()) << p.ErrorSummary();
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, Json::object());
  EXPECT_EQ(p.calls[1].arguments.dump(),
            Json::parse(R"({"color":{"name":"warm","r":255},"level":-3,"on":true,"ratio":1e-05,"room":"living room",
                "tags":["a","b"],"note":null})")
                .dump());
}

TEST(ParseCall, SchemaGuidesTypes) {
  // Bare text for a string parameter stays text (leading zeros kept); quoted numbers and booleans
  // for numeric/boolean parameters become numbers/booleans; 5.0 for an integer becomes 5.
  auto p = ParseModelOutput(std::string(kSet) + "{on:<escape>true<escape>,room:kitchen,zip:02134,level:<escape>5<escape>,ratio:2}" +
                                kEnd + kSet + "{on:True,room:<escape>kitchen<escape>,level:5.0}" + kEnd,
                            Tools());
  ASSERT_TRUE(p.ok()) << p.ErrorSummary();
  EXPECT_EQ(p.calls[0].arguments.dump(), R"({"level":5,"on":true,"ratio":2,"room":"kitchen","zip":"02134"})");
  EXPECT_EQ(p.calls[1].arguments.dump(), R"({"level":5,"on":true,"room":"kitchen"})");
  // Without declarations the syntax alone decides.
  auto q = ParseModelOutput(std::string(kSet) + "{a:02134,b:<escape>5<escape>,c:x y,d:-0.5,e:false,f:None}" + kEnd);
  ASSERT_TRUE(q.ok()) << q.ErrorSummary();
  EXPECT_EQ(q.calls[0].arguments.dump(), R"({"a":2134,"b":"5","c":"x y","d":-0.5,"e":false,"f":null})");
}

TEST(ParseCall, UnknownFunctionIsReportedPerCall) {
  auto p = ParseModelOutput("<start_function_call>call:launch_rocket{target:<escape>moon<escape>}<end_function_call>"
                            "<start_function_call>call:get_time{}<end_function_call>",
                            Tools());
  EXPECT_TRUE(p.status.ok());
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_FALSE(p.calls[0].ok());
  EXPECT_EQ(p.calls[0].errors, std::vector<std::string>{"unknown function 'launch_rocket'"});
  EXPECT_EQ(p.calls[0].arguments["target"], "moon");
  EXPECT_TRUE(p.calls[1].ok());
  EXPECT_FALSE(p.ok());
  EXPECT_NE(p.ErrorSummary().find("call 0 (launch_rocket): unknown function 'launch_rocket'"), std::string::npos);
}

TEST(ParseCall, SchemaViolationsAreReportedPerCall) {
  auto p = ParseModelOutput(std::string(kSet) + "{level:<escape>high<escape>,room:<escape>garage<escape>,color:{name:<escape>x<escape>},"
                                                "tags:[{x:1}],extra:1}" + kEnd,
                            Tools());
  EXPECT_TRUE(p.status.ok());
  ASSERT_EQ(p.calls.size(), 1u);
  const auto& e = p.calls[0].errors;
  auto has = [&](const std::string& s) { return std::find(e.begin(), e.end(), s) != e.end(); };
  EXPECT_TRUE(has("arguments: missing required parameter 'on'")) << p.ErrorSummary();
  EXPECT_TRUE(has("arguments.level: expected integer, got string")) << p.ErrorSummary();
  EXPECT_TRUE(has("arguments.room: \"garage\" is not one of [\"kitchen\",\"living room\"]")) << p.ErrorSummary();
  EXPECT_TRUE(has("arguments.color: missing required parameter 'r'")) << p.ErrorSummary();
  EXPECT_TRUE(has("arguments.tags[0]: expected string, got object")) << p.ErrorSummary();
  EXPECT_TRUE(has("arguments.extra: unknown parameter")) << p.ErrorSummary();
  EXPECT_EQ(e.size(), 6u) << p.ErrorSummary();
  // A tool that takes no arguments rejects any.
  auto q = ParseModelOutput("<start_function_call>call:get_time{tz:<escape>UTC<escape>}<end_function_call>", Tools());
  EXPECT_EQ(q.calls.at(0).errors, std::vector<std::string>{"arguments.tz: unknown parameter"});
  // A repeated key keeps the last value and is reported.
  auto r = ParseModelOutput("<start_function_call>call:search{query:<escape>a<escape>,query:<escape>b<escape>}<end_function_call>", Tools());
  EXPECT_EQ(r.calls.at(0).arguments["query"], "b");
  EXPECT_EQ(r.calls.at(0).errors, std::vector<std::string>{"arguments.query: given more than once (the last value is kept)"});
}

struct Malformed {
  std::string output;
  std::string error;  // a fragment of the status message
};

TEST(ParseCall, MalformedAndTruncatedOutputKeepsRawText) {
  const std::string ok_call = "<start_function_call>call:get_time{}<end_function_call>";
  const Malformed cases[] = {
      {ok_call + "<start_function_call>call:search{query:<escape>abc", "output ends inside a string value"},
      {"<start_function_call>call:search{query:<escape>abc<escape>}", "output ends after the arguments of 'search' (no <end_function_call>)"},
      {"<start_function_call>call:search{query:<escape>abc<escape>}<end_of_turn>", "expected <end_function_call>"},
      {"<start_function_call>call:set_lights{level:12", "output ends inside the value '12'"},
      {"<start_function_call>call:set_lights{tags:[<escape>a<escape>,", "output ends where a value was expected"},
      {"<start_function_call>call:set_lights{color:{r:1", "output ends inside the value '1'"},
      {"<start_function_call>call:set_lights{color:{r:1}", "output ends before '}'"},
      {"<start_function_call>call:set_lig", "output ends inside the function name"},
      {"<start_function_call>cal", "output ends inside 'call:'"},
      {"<start_function_call>", "output ends inside 'call:'"},
      {"<start_function_call>set_lights{}<end_function_call>", "expected 'call:'"},
      {"<start_function_call>call:set lights{}<end_function_call>", "malformed function name"},
      {"<start_function_call>call:f{a:{b:1]}<end_function_call>", "expected ',' or '}', found ']'"},
      {"<start_function_call>call:f{:1}<end_function_call>", "expected a key"},
      {"<start_function_call>call:f{a}<end_function_call>", "expected ':' after key 'a'"},
      {"<start_function_call>call:f{a:}<end_function_call>", "expected a value"},
      {"<start_function_call>call:f{a:[1 2}<end_function_call>", "expected ',' or ']'"},
      {"<start_function_call>call:f{a:1}<end_function", "output ends inside <end_function_call>"},
      {"<start_function_call>call:f{a:<escape>x<escape>y}<end_function_call>", "expected ',' or '}', found 'y'"},
      {"<start_function_call>call:f{a:" + std::string(5000, '[') + "1" + std::string(5000, ']') + "}<end_function_call>", "nested deeper"},
  };
  for (const auto& c : cases) {
    auto p = ParseModelOutput(c.output, Tools());
    EXPECT_FALSE(p.status.ok()) << c.output;
    EXPECT_FALSE(p.ok());
    EXPECT_NE(p.status.message().find(c.error), std::string::npos) << c.output << "\n  -> " << p.status.message();
    EXPECT_NE(p.status.message().find("byte "), std::string::npos) << p.status.message();
    EXPECT_EQ(p.raw, c.output);
  }
  // Calls completed before the error are kept.
  auto p = ParseModelOutput(cases[0].output, Tools());
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_time");
  // The offset points at the unterminated <escape>, 39 bytes into the second call.
  EXPECT_EQ(p.status.message().rfind("byte " + std::to_string(ok_call.size() + 39) + ": ", 0), 0u) << p.status.message();
}

TEST(ParseCall, WhitespaceAndEscapedKeysAreTolerated) {
  auto p = ParseModelOutput("<start_function_call>call:search{ query : <escape>x<escape> , <escape>k<escape>:{<escape>a b<escape>:1} }"
                            "<end_function_call>");
  ASSERT_TRUE(p.ok()) << p.ErrorSummary();
  EXPECT_EQ(p.calls[0].arguments.dump(), R"({"k":{"a b":1},"query":"x"})");
}

}  // namespace
}  // namespace fgemma::test

namespace fgemma::test {
namespace {

TEST(ParseCall, EveryTruncationInsideACallIsAnError) {
  const std::string first = "<start_function_call>call:set_lights{color:{name:<escape>a,b}<escape>,r:1},on:true,"
                            "room:<escape>kitchen<escape>,tags:[<escape>x<escape>,<escape>y<escape>]}<end_function_call>";
  const std::string second = "<start_function_call>call:get_time{}<end_function_call>";
  const std::string output = "Ok. " + first + second;
  const size_t first_start = 4, second_start = 4 + first.size();
  const auto tools = Tools();
  for (size_t n = 0; n <= output.size(); ++n) {
    const std::string prefix = output.substr(0, n);
    auto p = ParseModelOutput(prefix, tools);
    EXPECT_EQ(p.raw, prefix);
    const bool inside_first = n >= first_start + 21 && n < second_start;
    const bool inside_second = n >= second_start + 21 && n < output.size();
    if (inside_first || inside_second) {
      EXPECT_FALSE(p.status.ok()) << prefix;
      EXPECT_EQ(p.calls.size(), inside_second ? 1u : 0u) << prefix;
    } else if (n == second_start || n == output.size()) {
      EXPECT_TRUE(p.ok()) << prefix << "\n" << p.ErrorSummary();
      EXPECT_EQ(p.calls.size(), n == output.size() ? 2u : 1u);
    }
  }
}

TEST(ParseCall, InvalidUtf8IsReportedNotThrown) {
  auto p = ParseModelOutput("<start_function_call>call:search{query:<escape>\xe6\x9d<escape>}<end_function_call>", Tools());
  ASSERT_TRUE(p.status.ok());
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].errors, std::vector<std::string>{"arguments.query: text is not valid UTF-8"});
}

TEST(ParseCall, MutatedOutputsNeverCrash) {
  const std::string base = "<start_function_call>call:set_lights{color:{name:<escape>a<escape>,r:1},on:true,room:<escape>kitchen"
                           "<escape>,tags:[<escape>x<escape>]}<end_function_call><start_function_response>";
  const char alphabet[] = "{}[],:<>escape_0123456789 \n\x80\xff";
  std::mt19937 rng(5);
  const auto tools = Tools();
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    for (int k = static_cast<int>(rng() % 4) + 1; k > 0; --k) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[at] = alphabet[rng() % (sizeof(alphabet) - 1)]; break;
        case 1: s.erase(at, 1 + rng() % 8); break;
        default: s.insert(at, 1, alphabet[rng() % (sizeof(alphabet) - 1)]); break;
      }
      if (s.empty()) s = "x";
    }
    auto p = ParseModelOutput(s, tools);
    EXPECT_EQ(p.raw, s);
    if (p.status.ok()) {
      for (const auto& c : p.calls) EXPECT_EQ(c.raw, s.substr(c.offset, c.raw.size()));
    }
  }
}

}  // namespace
}  // namespace fgemma::test
