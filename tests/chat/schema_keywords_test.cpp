// Issue 31: every keyword a tool's parameters may use is enforced while decoding, checked after it,
// or refused at compile naming it. Here, per keyword, the call grammar and the validator are
// compared value by value: every value the grammar admits validates, and every value the
// validator admits (within the grammar's digit and length budget) the grammar admits.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>

#include "chat/call_grammar.h"
#include "chat/parse_call.h"
#include "chat/request.h"

namespace fgemma {
namespace {

constexpr std::string_view kEscapeText = "<escape>";

// A catalog of one function `f` whose one required parameter `v` has schema `v_schema`.
Result<std::vector<Tool>> OneParameter(const std::string& v_schema) {
  auto json = OrderedJson::parse(R"([{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object",
      "properties":{"v":)" + v_schema + R"(},"required":["v"]}}}])");
  return ParseTools(json);
}

struct Fixture {
  std::vector<Tool> tools;
  CallGrammar grammar;
};

Fixture Compile(const std::string& v_schema) {
  auto tools = OneParameter(v_schema);
  EXPECT_TRUE(tools.ok()) << v_schema << ": " << tools.status().ToString();
  GrammarLimits limits;
  limits.max_string_bytes = 24;
  auto g = CallGrammar::Compile(tools.value(), ToolChoice{ToolChoiceMode::kRequired, ""}, limits);
  EXPECT_TRUE(g.ok()) << v_schema << ": " << g.status().ToString();
  return {std::move(tools).value(), std::move(g).value()};
}

// Feeds text in which "<escape>" stands for the control symbol.
bool FeedText(CallMatcher& m, std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kEscapeText.size()) == kEscapeText) {
      if (!m.Feed(kSymEscape)) return false;
      i += kEscapeText.size();
    } else {
      if (!m.Feed(static_cast<uint8_t>(text[i]))) return false;
      ++i;
    }
  }
  return true;
}

CallMatcher AtValue(const Fixture& fx) {
  CallMatcher m(&fx.grammar);
  EXPECT_TRUE(m.Feed(kSymStartCall));
  EXPECT_TRUE(FeedText(m, "call:f{v:"));
  return m;
}

bool GrammarAccepts(const Fixture& fx, std::string_view value) {
  CallMatcher m = AtValue(fx);
  return FeedText(m, value) && m.Feed('}') && m.Feed(kSymEndCall) && m.Feed(kSymEos) && m.Done();
}

bool ValidatorAccepts(const Fixture& fx, std::string_view value) {
  const std::string text = "<start_function_call>call:f{v:" + std::string(value) + "}<end_function_call>";
  const ParsedOutput parsed = ParseModelOutput(text, fx.tools);
  return parsed.ok() && parsed.calls.size() == 1;
}

// Every complete value the grammar admits over `alphabet` up to `max_len` symbols validates; returns
// how many there were.
size_t EnumerateAdmitted(const Fixture& fx, const std::vector<std::string>& alphabet, size_t max_len) {
  size_t admitted = 0;
  std::function<void(const CallMatcher&, const std::string&, size_t)> walk = [&](const CallMatcher& m, const std::string& text, size_t len) {
    CallMatcher end = m;
    if (!text.empty() && end.Feed('}') && end.Feed(kSymEndCall)) {  // the value is complete, not a prefix
      ++admitted;
      EXPECT_TRUE(ValidatorAccepts(fx, text)) << "grammar admits " << text;
    }
    if (len == max_len) return;
    for (const std::string& a : alphabet) {
      CallMatcher next = m;
      if (FeedText(next, a)) walk(next, text + a, len + 1);
    }
  };
  walk(AtValue(fx), "", 0);
  return admitted;
}

const std::vector<std::string> kNumberAlphabet = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "-", ".", "e"};

std::string RandomDecimal(std::mt19937& rng, int max_int_digits, int max_frac_digits) {
  std::uniform_int_distribution<int> coin(0, 1), digit(0, 9);
  std::string s = coin(rng) ? "-" : "";
  const int int_digits = 1 + std::uniform_int_distribution<int>(0, max_int_digits - 1)(rng);
  for (int i = 0; i < int_digits; ++i) s.push_back(static_cast<char>('0' + (i == 0 && int_digits > 1 ? 1 + digit(rng) % 9 : digit(rng))));
  if (max_frac_digits > 0 && coin(rng)) {
    s.push_back('.');
    const int frac = 1 + std::uniform_int_distribution<int>(0, max_frac_digits - 1)(rng);
    for (int i = 0; i < frac; ++i) s.push_back(static_cast<char>('0' + digit(rng)));
  }
  return s;
}

// Grammar and validator agree on `samples` random decimals (no exponent; integers without a point).
// `integral_floats`: also compare whole numbers written with a point ("90.0"), which the validator
// counts as integers and the grammar writes without one (off for a union with an integer branch).
void ExpectSameVerdicts(const std::string& schema, int int_digits, int frac_digits, size_t samples = 3000, bool integral_floats = true) {
  const Fixture fx = Compile(schema);
  std::mt19937 rng(31);
  size_t valid = 0;
  for (size_t i = 0; i < samples; ++i) {
    const std::string v = RandomDecimal(rng, int_digits, frac_digits);
    // A signed zero ("-0.00") is zero: written without the sign where no negative is allowed.
    if (v[0] == '-' && v.find_first_not_of("-0.") == std::string::npos) continue;
    if (!integral_floats && v.find('.') != std::string::npos && v.find_first_not_of('0', v.find('.') + 1) == std::string::npos) continue;
    const bool by_schema = ValidatorAccepts(fx, v);
    valid += by_schema;
    EXPECT_EQ(GrammarAccepts(fx, v), by_schema) << schema << " value " << v;
  }
  EXPECT_GT(valid, 0u) << schema;
  EXPECT_LT(valid, samples) << schema;
}

TEST(SchemaKeywords, IntegerRangesInclusiveExclusiveNegativeLarge) {
  for (const char* schema : {R"({"type":"integer","minimum":1,"maximum":5})", R"({"type":"integer","minimum":-40,"maximum":-3})",
                             R"({"type":"integer","exclusiveMinimum":-7,"exclusiveMaximum":120})",
                             R"({"type":"integer","minimum":0,"maximum":100,"exclusiveMaximum":true})",
                             R"({"type":"integer","minimum":-2.5,"maximum":99.5})", R"({"type":"integer","maximum":-100})",
                             R"({"type":"integer","minimum":150, "multipleOf":25})", R"({"type":"integer","format":"int32","minimum":-9})"}) {
    ExpectSameVerdicts(schema, 4, 0);
  }
  ExpectSameVerdicts(R"({"type":"integer","minimum":1000000000000,"maximum":999999999999999999})", 18, 0);
  // Past 2^53, where doubles skip integers, the bounds still hold to the unit.
  const Fixture big = Compile(R"({"type":"integer","minimum":-9007199254740993,"maximum":-9007199254740000})");
  for (const char* v : {"-9007199254740993", "-9007199254740000", "-9007199254740994", "-9007199254739999", "-9007199254740500"})
    EXPECT_EQ(GrammarAccepts(big, v), ValidatorAccepts(big, v)) << v;
  EXPECT_TRUE(GrammarAccepts(big, "-9007199254740993"));
  EXPECT_FALSE(GrammarAccepts(big, "-9007199254740994"));
}

TEST(SchemaKeywords, NumberRangesAndSteps) {
  for (const char* schema : {R"({"type":"number","minimum":0.5,"maximum":2.25})", R"({"type":"number","minimum":-1.5,"exclusiveMaximum":0})",
                             R"({"type":"number","exclusiveMinimum":0.1,"exclusiveMaximum":0.3})", R"({"type":"number","multipleOf":0.25})",
                             R"({"type":"number","minimum":-10,"maximum":10,"multipleOf":0.1})",
                             R"({"type":"number","minimum":3,"maximum":3})"}) {
    ExpectSameVerdicts(schema, 2, 4);
  }
}

TEST(SchemaKeywords, AdmittedNumbersAllValidate) {
  // -12..31 and "-0" (zero, written with the sign a negative range allows).
  EXPECT_EQ(EnumerateAdmitted(Compile(R"({"type":"integer","minimum":-12,"maximum":31})"), kNumberAlphabet, 4), 45u);
  EXPECT_EQ(EnumerateAdmitted(Compile(R"({"type":"integer","minimum":0,"maximum":90,"multipleOf":15})"), kNumberAlphabet, 4), 7u);
  EXPECT_GT(EnumerateAdmitted(Compile(R"({"type":"number","exclusiveMinimum":-1,"maximum":1.5})"), kNumberAlphabet, 4), 100u);
  EXPECT_EQ(EnumerateAdmitted(Compile(R"({"type":"integer","enum":[1,2,3,12,-40]})"), kNumberAlphabet, 4), 5u);
  EXPECT_EQ(EnumerateAdmitted(Compile(R"({"type":"number","enum":[0.5,2,-1.25]})"), kNumberAlphabet, 6), 3u);
  EXPECT_EQ(EnumerateAdmitted(Compile(R"({"type":"boolean","const":true})"), {"t", "r", "u", "e", "f", "a", "l", "s"}, 6), 1u);
}

TEST(SchemaKeywords, TheIssueCallCannotBeWritten) {
  const Fixture speed = Compile(R"({"type":"integer","enum":[1,2,3]})");
  EXPECT_FALSE(GrammarAccepts(speed, "557555557575038842"));
  EXPECT_TRUE(GrammarAccepts(speed, "2"));
  const Fixture level = Compile(R"({"type":"integer","minimum":1,"maximum":5})");
  EXPECT_FALSE(GrammarAccepts(level, "7000000"));
  EXPECT_FALSE(GrammarAccepts(level, "0"));
  EXPECT_TRUE(GrammarAccepts(level, "5"));
  // The first digit already decides: after "7" nothing completes a value.
  CallMatcher m = AtValue(level);
  EXPECT_FALSE(m.Feed('7'));
}

std::string RandomText(std::mt19937& rng, std::string_view alphabet, size_t max_len) {
  std::string s;
  const size_t n = std::uniform_int_distribution<size_t>(0, max_len)(rng);
  for (size_t i = 0; i < n; ++i) s.push_back(alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)]);
  return s;
}

void ExpectSameStringVerdicts(const std::string& schema, std::string_view alphabet, size_t max_len, size_t samples = 4000) {
  const Fixture fx = Compile(schema);
  std::mt19937 rng(7);
  size_t valid = 0;
  for (size_t i = 0; i < samples; ++i) {
    const std::string v = "<escape>" + RandomText(rng, alphabet, max_len) + "<escape>";
    const bool by_schema = ValidatorAccepts(fx, v);
    valid += by_schema;
    EXPECT_EQ(GrammarAccepts(fx, v), by_schema) << schema << " value " << v;
  }
  EXPECT_GT(valid, 0u) << schema;
}

TEST(SchemaKeywords, StringLengthsInCharacters) {
  ExpectSameStringVerdicts(R"({"type":"string","minLength":2,"maxLength":4})", "ab\xC3\xA9", 8);
  ExpectSameStringVerdicts(R"({"type":"string","maxLength":0})", "ab", 3);
  ExpectSameStringVerdicts(R"({"type":"string","minLength":3})", "xyz", 6);
  // minLength keeps room: with 24 bytes and 20 characters still due, a 4-byte character early is
  // fine, but one that would leave fewer bytes than characters due is refused.
  const Fixture fx = Compile(R"({"type":"string","minLength":22})");
  CallMatcher m = AtValue(fx);
  ASSERT_TRUE(m.Feed(kSymEscape));
  EXPECT_FALSE(m.Accepts(0xF0));
  EXPECT_TRUE(m.Accepts(0xC3));
}

TEST(SchemaKeywords, PatternsAndFormats) {
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^[a-c]{2,3}$"})", "abcd", 5);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^(on|off)$"})", "onf", 4);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"b+a"})", "ab", 6);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^\\d{3}-\\d{2}$"})", "12-", 7, 20000);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^[^a]*(?:x|yz)?$"})", "axyz", 6);
  ExpectSameStringVerdicts(R"({"type":"string","format":"date"})", "0123-", 10, 20000);
}

TEST(SchemaKeywords, ArrayItemCounts) {
  const Fixture fx = Compile(R"({"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"minItems":2,"maxItems":3})");
  for (const char* v : {"[]", "[1]", "[1,2]", "[1,2,3]", "[1,2,3,4]", "[1,12]", "[-1,2]"})
    EXPECT_EQ(GrammarAccepts(fx, v), ValidatorAccepts(fx, v)) << v;
  EXPECT_TRUE(GrammarAccepts(fx, "[4,5,6]"));
  const Fixture many = Compile(R"({"type":"array","minItems":10})");  // above the grammar's 8: raised
  EXPECT_TRUE(GrammarAccepts(many, "[1,2,3,4,5,6,7,8,9,10]"));
  EXPECT_FALSE(GrammarAccepts(many, "[1,2,3,4,5,6,7,8,9]"));
  EXPECT_FALSE(GrammarAccepts(many, "[1,2,3,4,5,6,7,8,9,10,11]"));
}

TEST(SchemaKeywords, NestedObjectsAndArraysOfObjects) {
  const Fixture fx = Compile(R"({"type":"array","maxItems":2,"items":{"type":"object","properties":{
      "n":{"type":"integer","minimum":1,"maximum":3},"s":{"type":"string","enum":["a","b"]}},"required":["n"]}})");
  for (const char* v : {"[{n:2}]", "[{n:4}]", "[{n:1,s:<escape>b<escape>},{n:3}]", "[{n:1},{n:2},{n:3}]", "[{s:<escape>a<escape>}]"})
    EXPECT_EQ(GrammarAccepts(fx, v), ValidatorAccepts(fx, v)) << v;
}

TEST(SchemaKeywords, NullableTypeListsAndAnyOfWithNull) {
  for (const char* schema : {R"({"type":"integer","minimum":1,"maximum":3,"nullable":true})", R"({"type":["integer","null"],"minimum":1,"maximum":3})",
                             R"({"anyOf":[{"type":"null"},{"type":"integer","minimum":1,"maximum":3}],"description":"d"})"}) {
    const Fixture fx = Compile(schema);
    // (The parser also reads Python's None as null; the grammar writes null.)
    for (const char* v : {"null", "2", "4", "nul", "[2]"}) EXPECT_EQ(GrammarAccepts(fx, v), ValidatorAccepts(fx, v)) << schema << " " << v;
    EXPECT_TRUE(GrammarAccepts(fx, "null")) << schema;
    EXPECT_EQ(EnumerateAdmitted(fx, {"1", "2", "3", "4", "n", "u", "l"}, 4), 4u) << schema;
  }
  const Fixture plain = Compile(R"({"type":"string","enum":["a"]})");
  EXPECT_FALSE(GrammarAccepts(plain, "null"));
  const Fixture objects = Compile(R"({"type":"array","items":{"type":"object","nullable":true,"properties":{"k":{"type":"boolean"}}}})");
  EXPECT_TRUE(GrammarAccepts(objects, "[null,{k:true},{}]"));
  EXPECT_TRUE(ValidatorAccepts(objects, "[null,{k:true},{}]"));
  EXPECT_FALSE(GrammarAccepts(objects, "[{k:null}]"));
}

// Grammar and validator agree on each of `values`.
void ExpectAgreeOn(const std::string& schema, const std::vector<std::string>& values) {
  const Fixture fx = Compile(schema);
  for (const std::string& v : values) EXPECT_EQ(GrammarAccepts(fx, v), ValidatorAccepts(fx, v)) << schema << " value " << v;
}

TEST(SchemaKeywords, AnyOfOfDifferentTypes) {
  const std::string schema = R"({"anyOf":[{"type":"integer","minimum":0,"maximum":20},{"type":"string","enum":["low","high"]}]})";
  ExpectAgreeOn(schema, {"0", "20", "21", "-1", "<escape>low<escape>", "<escape>lo<escape>", "<escape>mid<escape>", "true", "null", "[1]"});
  // The integers 0..20 written with these digits (0 1 2 9 10 11 12 19 20) and the two strings, nothing else.
  EXPECT_EQ(EnumerateAdmitted(Compile(schema), {"0", "1", "2", "9", "-", "<escape>", "low", "high", "w"}, 4), 9u + 2u);
  ExpectAgreeOn(R"({"anyOf":[{"type":"boolean"},{"type":"array","items":{"type":"integer","maximum":3}},{"type":"null"}]})",
                {"true", "false", "null", "[]", "[3]", "[4]", "[true]", "3"});
}

TEST(SchemaKeywords, AnyOfBranchesSharingAPrefixAreNotChosenEarly) {
  // Both branches are strings (or integers): the grammar runs them side by side until the text
  // tells them apart, so each branch's whole language stays reachable.
  ExpectSameStringVerdicts(R"({"anyOf":[{"type":"string","maxLength":2},{"type":"string","pattern":"^[ab]+c$"}]})", "abc", 6);
  ExpectSameStringVerdicts(R"({"anyOf":[{"type":"string","enum":["ab","abcab"]},{"type":"string","pattern":"^a(bc)*$"}]})", "abc", 6);
  ExpectSameVerdicts(R"({"anyOf":[{"type":"integer","minimum":0,"maximum":9},{"type":"integer","minimum":100,"maximum":120}]})", 3, 0);
  ExpectSameVerdicts(R"({"anyOf":[{"type":"number","multipleOf":0.5,"maximum":3},{"type":"integer","minimum":50}]})", 3, 2, 3000, false);
  ExpectSameVerdicts(R"({"anyOf":[{"type":"integer","enum":[5,12]},{"type":"integer","minimum":120,"maximum":130}]})", 3, 0);
  const Fixture fx = Compile(R"({"anyOf":[{"type":"integer","minimum":0,"maximum":9},{"type":"integer","minimum":100,"maximum":120}]})");
  EXPECT_EQ(EnumerateAdmitted(fx, kNumberAlphabet, 3), 10u + 21u);
}

TEST(SchemaKeywords, AnyOfOfObjectsWithDifferentProperties) {
  const std::string schema = R"({"anyOf":[{"type":"object","properties":{"a":{"type":"integer","maximum":5}},"required":["a"]},
      {"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"string","enum":["x"]}},"required":["b"]}]})";
  ExpectAgreeOn(schema, {"{a:1}", "{a:6}", "{a:true}", "{b:<escape>x<escape>}", "{a:true,b:<escape>x<escape>}", "{a:1,b:<escape>x<escape>}",
                         "{}", "{a:false,b:<escape>y<escape>}", "{b:<escape>x<escape>,a:true}"});
  EXPECT_TRUE(GrammarAccepts(Compile(schema), "{a:true,b:<escape>x<escape>}"));
  // {a:0}, {a:5}, {b:x}, and {a:true|false,b:x} with the keys in either order.
  EXPECT_EQ(EnumerateAdmitted(Compile(schema), {"{", "}", "a:", "b:", ",", "0", "5", "7", "true", "false", "<escape>x<escape>"}, 7), 7u);
}

TEST(SchemaKeywords, NestedAnyOfInItemsAndProperties) {
  const std::string schema = R"({"type":"array","maxItems":3,"items":{"anyOf":[{"type":"integer","minimum":1,"maximum":3},
      {"type":"object","properties":{"k":{"anyOf":[{"type":"string","maxLength":1},{"type":"string","pattern":"^zz+$"},{"type":"null"}]}}},
      {"type":"null"}]}})";
  ExpectAgreeOn(schema, {"[]", "[1,null,3]", "[4]", "[{k:null}]", "[{k:<escape>a<escape>},2]", "[{k:<escape>ab<escape>}]",
                         "[{k:<escape>zzz<escape>}]", "[{k:<escape>z<escape>}]", "[1,2,3,1]", "[null,{}]"});
  EXPECT_TRUE(GrammarAccepts(Compile(schema), "[{k:<escape>zzz<escape>},null,2]"));
}

TEST(SchemaKeywords, FourBranchesOpenAtOnceThroughNesting) {
  // Two arrays whose items are two strings each: four threads while an item is written, and as many
  // again forked while one symbol is fed (the matcher's kMaxThreads).
  const std::string schema = R"({"anyOf":[{"type":"array","maxItems":2,"items":{"anyOf":[{"type":"string","maxLength":1},{"type":"string","pattern":"^a+$"}]}},
      {"type":"array","minItems":2,"items":{"anyOf":[{"type":"string","pattern":"^b+$"},{"type":"string","pattern":"^ab$"}]}}]})";
  ExpectAgreeOn(schema, {"[<escape>x<escape>]", "[<escape>aaa<escape>,<escape>a<escape>]", "[<escape>bb<escape>,<escape>ab<escape>]",
                         "[<escape>ab<escape>,<escape>ab<escape>]", "[<escape>ab<escape>]", "[<escape>ab<escape>,<escape>ab<escape>,<escape>b<escape>]",
                         "[<escape>aab<escape>]", "[]", "[<escape>b<escape>,<escape>xy<escape>]"});
  EXPECT_TRUE(GrammarAccepts(Compile(schema), "[<escape>ab<escape>,<escape>ab<escape>,<escape>b<escape>]"));
}

TEST(SchemaKeywords, TypeLists) {
  const std::string mixed = R"({"type":["integer","string"],"minimum":0,"maximum":50,"maxLength":2})";
  ExpectAgreeOn(mixed, {"0", "50", "51", "-3", "<escape>ab<escape>", "<escape>abc<escape>", "<escape><escape>", "null", "true"});
  // 0 5 50, and the strings of at most two of 5 0 a: 1 + 3 + 9.
  EXPECT_EQ(EnumerateAdmitted(Compile(mixed), {"5", "0", "<escape>", "a"}, 4), 3u + 13u);
  const std::string scalars = R"({"type":["number","boolean","null"],"exclusiveMinimum":0})";
  ExpectAgreeOn(scalars, {"0", "0.5", "-1", "true", "false", "null", "<escape>x<escape>", "[]"});
  ExpectSameVerdicts(R"({"type":["integer","number"],"minimum":-2,"maximum":2.5})", 2, 2);
  ExpectAgreeOn(R"({"type":["string","integer","null"],"enum":["on",1,2,null]})", {"<escape>on<escape>", "<escape>off<escape>", "1", "3", "null"});
}

TEST(SchemaKeywords, PatternWithLengthBounds) {
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^[a-c]+$","minLength":2,"maxLength":4})", "abcd", 6);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"^a*b$","maxLength":3})", "ab", 5);
  ExpectSameStringVerdicts(R"({"type":"string","pattern":"x","minLength":3,"maxLength":4})", "x\xC3\xA9" "a", 8);
  ExpectSameStringVerdicts(R"({"type":"string","format":"time","maxLength":8})", "012:", 9, 20000);
  // The character counter and the automaton together: after "aaa" no "b" fits in 3 characters.
  const Fixture fx = Compile(R"({"type":"string","pattern":"^a*b$","maxLength":3})");
  CallMatcher m = AtValue(fx);
  ASSERT_TRUE(FeedText(m, "<escape>aa"));
  EXPECT_FALSE(m.Accepts('a'));
  EXPECT_TRUE(m.Accepts('b'));
  // Multi-byte characters count once: "éé" + "x" is 3 characters (5 bytes).
  const Fixture utf8 = Compile(R"({"type":"string","pattern":"x$","maxLength":3})");
  EXPECT_TRUE(GrammarAccepts(utf8, "<escape>\xC3\xA9\xC3\xA9x<escape>"));
  EXPECT_FALSE(GrammarAccepts(utf8, "<escape>\xC3\xA9\xC3\xA9\xC3\xA9x<escape>"));
}

TEST(SchemaKeywords, ValidatorReportsUnions) {
  const auto tools = OneParameter(R"({"type":"object","properties":{"u":{"anyOf":[{"type":"integer","maximum":5},{"type":"string","maxLength":1}]},
      "t":{"type":["integer","boolean"],"minimum":0},"w":{"anyOf":[{"type":"integer","maximum":5},{"type":"number","minimum":10}]}}})");
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  const auto errors = ValidateArguments(tools.value()[0].parameters, Json::parse(R"({"v":{"u":[1],"t":-1,"w":7}})"));
  const std::set<std::string> got(errors.begin(), errors.end());
  for (const char* want : {"arguments.v.u: expected integer or string, got array", "arguments.v.t: -1 is below the minimum 0",
                           "arguments.v.w: 7 matches no branch of its anyOf (arguments.v.w: 7 is above the maximum 5; arguments.v.w: 7 is below the minimum 10)"}) {
    EXPECT_EQ(got.count(want), 1u) << want;
  }
  EXPECT_EQ(errors.size(), 3u);
  EXPECT_TRUE(ValidateArguments(tools.value()[0].parameters, Json::parse(R"({"v":{"u":"a","t":true,"w":12.5}})")).empty());
}

Status CompileStatus(const std::string& schema, uint32_t max_string_bytes = 200) {
  auto tools = OneParameter(schema);
  if (!tools.ok()) return tools.status();
  GrammarLimits limits;
  limits.max_string_bytes = max_string_bytes;
  return CallGrammar::Compile(tools.value(), ToolChoice{}, limits).status();
}

TEST(SchemaKeywords, UnsupportedKeywordsAreRefusedNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"object","minProperties":1})", "minProperties"},
      {R"({"type":"string","contentEncoding":"base64"})", "contentEncoding"},
      {R"({"type":"array","prefixItems":[]})", "prefixItems"},
      {R"({"type":"array","uniqueItems":true})", "uniqueItems"},
      {R"({"type":"integer","minLength":2})", "minLength"},
      {R"({"type":"string","maximum":2})", "maximum"},
      {R"({"type":"string","format":"hostname"})", "format"},
      {R"({"type":"string","pattern":"(?=a)b"})", "pattern"},
      {R"({"type":"string","pattern":"(a)\\1"})", "pattern"},
      {R"({"type":"string","pattern":"a^b"})", "pattern"},
      {R"({"type":"string","pattern":"[é]"})", "pattern"},
      {R"({"type":"string","pattern":"^a|b$"})", "pattern"},
      {R"({"type":"number","multipleOf":1e-20})", "multipleOf"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "maximum"},
      {R"({"type":"string","enum":["a","bb"],"maxLength":1})", "enum"},
      {R"({"type":"integer","enum":[1,2],"const":1})", "const"},
      {R"({"anyOf":[{"type":"string"}],"minLength":2})", "minLength"},
      {R"({"oneOf":[{"type":"string"}]})", "oneOf"},
      // Five strings could be open at once while decoding (at most kMaxOpenBranches = 4).
      {R"({"anyOf":[{"type":"string","maxLength":1},{"type":"string","maxLength":2},{"type":"string","maxLength":3},
           {"type":"string","maxLength":4},{"type":"string","maxLength":5}]})", "anyOf"},
      {R"({"type":["string","integer"],"minItems":1})", "minItems"},
      {R"({"type":["string","integer"],"enum":["a",true]})", "enum"},
      {R"({"type":"string","pattern":"^a{5}$","maxLength":3})", "pattern"},
  };
  for (const auto& [schema, keyword] : cases) {
    const Status st = CompileStatus(schema);
    EXPECT_FALSE(st.ok()) << schema;
    EXPECT_NE(st.message().find(keyword), std::string::npos) << schema << ": " << st.message();
  }
  // Bounds the grammar cannot meet inside its budget are refused at compile, not decoded into a dead end.
  EXPECT_FALSE(CompileStatus(R"({"type":"integer","minimum":1e30})").ok());
  EXPECT_FALSE(CompileStatus(R"({"type":"string","minLength":30})", 24).ok());
  EXPECT_FALSE(CompileStatus(R"({"type":"string","format":"uuid"})", 24).ok());
  EXPECT_TRUE(CompileStatus(R"({"type":"string","format":"uuid"})").ok());
  // Annotations are read and not applied.
  EXPECT_TRUE(CompileStatus(R"({"type":"string","title":"T","default":"x","examples":["y"],"x-unit":"cm","$comment":"c"})").ok());
}

TEST(SchemaKeywords, ValidatorReportsEachKeyword) {
  const auto tools = OneParameter(R"({"type":"object","properties":{"i":{"type":"integer","minimum":1,"maximum":5},
      "n":{"type":"number","exclusiveMaximum":1,"multipleOf":0.25},"s":{"type":"string","minLength":2},"p":{"type":"string","pattern":"^[a-z]+$"},
      "a":{"type":"array","maxItems":1}}})");
  ASSERT_TRUE(tools.ok()) << tools.status().ToString();
  const Json args = Json::parse(R"({"v":{"i":7,"n":1,"s":"A","p":"A","a":[1,2]}})");
  const auto errors = ValidateArguments(tools.value()[0].parameters, args);
  const std::set<std::string> got(errors.begin(), errors.end());
  for (const char* want : {"arguments.v.i: 7 is above the maximum 5", "arguments.v.n: 1 is above the exclusive maximum 1",
                           "arguments.v.s: 1 characters, fewer than minLength 2", "arguments.v.p: \"A\" does not match its pattern",
                           "arguments.v.a: 2 items, more than maxItems 1"}) {
    EXPECT_EQ(got.count(want), 1u) << want;
  }
  EXPECT_EQ(errors.size(), 5u);
  EXPECT_TRUE(ValidateArguments(tools.value()[0].parameters, Json::parse(R"({"v":{"i":5,"n":0.75,"s":"ab","p":"ab","a":[1]}})")).empty());
}

}  // namespace
}  // namespace fgemma
