// Round trip: random arguments valid under random schemas, written as the model writes them
// (FormatCall), parse back to the same JSON, typed by the schema or by syntax alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "chat/call_format.h"
#include "chat/parse_call.h"
#include "chat/py_text.h"
#include "chat/render.h"
#include "chat/schema.h"
#include "chat_test_util.h"

namespace fgemma::test {
namespace {

const char* const kNames[] = {"room", "Room", "level", "a", "B", "b", "état", "東京", "x_y", "x-y", "x.y", "_u", "9n", "on", "zip"};
const char* const kStrings[] = {"", "plain", "a,b", "{x:y}", "[1,2]", "key:value", "5", "-3.5", "true", "None", "null",
                                "  spaced  ", "line\nbreak", "tab\t", "Zürich", "東京", "🙂", "<b>", "<end_function_call>",
                                "<start_function_call>call:x{}", "\"quoted\"", "back\\slash", "<escape", "escape>", "}]"};

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T, size_t N>
  const T& Pick(const T (&a)[N]) { return a[Int(0, N - 1)]; }

  std::string String() {
    if (Coin(0.6)) return Pick(kStrings);
    std::string s;
    for (int i = Int(1, 12); i > 0; --i) {
      static const char32_t ranges[][2] = {{0x20, 0x7e}, {0xa0, 0x24f}, {0x4e00, 0x4fff}, {0x1f600, 0x1f64f}, {0x0a, 0x0a}};
      const auto& r = ranges[Int(0, 4)];
      py::AppendUtf8(static_cast<char32_t>(Int(static_cast<int>(r[0]), static_cast<int>(r[1]))), &s);
    }
    while (s.find("<escape>") != std::string::npos) s.replace(s.find("<escape>"), 1, "(");
    return s;
  }

  Json Number() {
    switch (Int(0, 4)) {
      case 0: return Int(-1000, 1000);
      case 1: return std::ldexp(static_cast<double>(Int(-1 << 20, 1 << 20)), Int(-30, 30));
      case 2: return static_cast<double>(Int(-100, 100));  // integral float: printed "2.0"
      case 3: {
        uint64_t bits = rng_();
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        return std::isfinite(d) ? d : 0.5;
      }
      default: return Int(0, 1) ? 1e16 : -1e-5;
    }
  }

  Json Integer() {
    switch (Int(0, 3)) {
      case 0: return Int(-100, 100);
      case 1: return static_cast<int64_t>(rng_());
      case 2: return Coin(0.5) ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
      default: return Int(-2000000000, 2000000000);
    }
  }

  // A schema as a tool would declare it.
  OrderedJson SchemaJson(int depth) {
    static const char* const kTypes[] = {"string", "integer", "number", "boolean", "array", "object"};
    const std::string type = depth >= 3 ? kTypes[Int(0, 3)] : kTypes[Int(0, 5)];
    OrderedJson s = {{"type", type}};
    if (Coin(0.5)) s["description"] = Pick(kStrings);
    if (Coin(0.1)) s["nullable"] = true;
    if (type == "string" && Coin(0.3)) {
      s["enum"] = OrderedJson::array();
      for (int i = Int(1, 4); i > 0; --i) s["enum"].push_back(String());
    }
    if (type == "integer" && Coin(0.1)) s["enum"] = {1, 5, -7};
    if (type == "array" && Coin(0.8)) s["items"] = SchemaJson(depth + 1);
    if (type == "object" && Coin(0.85)) {
      OrderedJson props = OrderedJson::object();
      for (int i = Int(0, 4); i > 0; --i) props[Pick(kNames)] = SchemaJson(depth + 1);
      s["properties"] = props;
      OrderedJson required = OrderedJson::array();
      for (const auto& [k, v] : props.items()) {
        if (Coin(0.5)) required.push_back(k);
      }
      if (!required.empty()) s["required"] = required;
    }
    return s;
  }

  Json Untyped(int depth) {
    switch (Int(0, depth >= 3 ? 3 : 5)) {
      case 0: return String();
      case 1: return Number();
      case 2: return Coin(0.5);
      case 3: return nullptr;
      case 4: {
        Json a = Json::array();
        for (int i = Int(0, 3); i > 0; --i) a.push_back(Untyped(depth + 1));
        return a;
      }
      default: {
        Json o = Json::object();
        for (int i = Int(0, 3); i > 0; --i) o[Pick(kNames)] = Untyped(depth + 1);
        return o;
      }
    }
  }

  // A value valid under `s`.
  Json Value(const Schema& s, int depth) {
    if (s.nullable && Coin(0.15)) return nullptr;
    if (!s.enum_values.empty()) return s.enum_values[Int(0, static_cast<int>(s.enum_values.size()) - 1)];
    switch (s.type) {
      case SchemaType::kString: return String();
      case SchemaType::kInteger: return Integer();
      case SchemaType::kNumber: return Number();
      case SchemaType::kBoolean: return Coin(0.5);
      case SchemaType::kArray: {
        Json a = Json::array();
        for (int i = Int(0, 3); i > 0; --i) a.push_back(s.items ? Value(*s.items, depth + 1) : Untyped(depth + 1));
        return a;
      }
      case SchemaType::kObject: {
        Json o = Json::object();
        if (!s.has_properties) {
          for (int i = Int(0, 3); i > 0; --i) o[Pick(kNames)] = Untyped(depth + 1);
          return o;
        }
        for (const auto& p : s.properties) {
          const bool required = std::find(s.required.begin(), s.required.end(), p.name) != s.required.end();
          if (required || Coin(0.6)) o[p.name] = Value(p.schema, depth + 1);
        }
        return o;
      }
    }
    return nullptr;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(RoundTrip, RandomArgumentsUnderRandomSchemas) {
  Gen g(20240611);
  int calls_checked = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    // One to three tools, each called once, after optional text.
    std::vector<Tool> tools;
    std::vector<Json> args;
    std::string output = g.Coin(0.3) ? "Let me do that. " : "";
    for (int t = g.Int(1, 3); t > 0; --t) {
      OrderedJson params = g.SchemaJson(0);
      params["type"] = "object";
      params.erase("enum");
      params.erase("items");
      params.erase("nullable");
      if (!params.contains("properties")) params["properties"] = OrderedJson::object();
      auto schema = ParseSchema(params, "parameters");
      ASSERT_TRUE(schema.ok()) << schema.status().ToString() << "\n" << params.dump();
      Tool tool{"fn_" + std::to_string(tools.size()), "d", *schema};
      Json a = g.Value(tool.parameters, 0);
      ASSERT_TRUE(ValidateArguments(tool.parameters, a).empty()) << a.dump() << "\n" << params.dump();
      auto text = FormatCall(tool.name, a);
      ASSERT_TRUE(text.ok()) << text.status().ToString();
      output += *text;
      tools.push_back(std::move(tool));
      args.push_back(std::move(a));
    }
    output += g.Coin(0.5) ? "<start_function_response>" : "";
    for (bool typed : {true, false}) {
      auto parsed = typed ? ParseModelOutput(output, tools) : ParseModelOutput(output);
      ASSERT_TRUE(parsed.ok()) << parsed.ErrorSummary() << "\n" << output;
      ASSERT_EQ(parsed.calls.size(), args.size()) << output;
      for (size_t i = 0; i < args.size(); ++i) {
        ASSERT_EQ(parsed.calls[i].name, tools[i].name);
        // dump() also distinguishes 2 from 2.0.
        ASSERT_EQ(parsed.calls[i].arguments.dump(), args[i].dump()) << (typed ? "typed" : "untyped") << "\n" << output;
        ++calls_checked;
      }
    }
  }
  std::printf("round trip: %d calls parsed back exactly\n", calls_checked);
}

TEST(RoundTrip, FormatCallMatchesTheTemplatesRendering) {
  // The formatter writes a call exactly as the template renders the same assistant tool call.
  Gen g(7);
  for (int iter = 0; iter < 300; ++iter) {
    Json a = Json::object();
    for (int i = g.Int(0, 4); i > 0; --i) a[g.Pick(kNames)] = g.Untyped(0);
    auto call = FormatCall("do_it", a);
    ASSERT_TRUE(call.ok()) << call.status().ToString();
    OrderedJson messages = {{{"role", "user"}, {"content", "go"}},
                            {{"role", "assistant"}, {"tool_calls", {{{"function", {{"name", "do_it"}, {"arguments", OrderedJson(a)}}}}}}}};
    auto prompt = RenderRequest(nullptr, messages, false);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
    EXPECT_EQ(*prompt, "<bos><start_of_turn>user\ngo<end_of_turn>\n<start_of_turn>model\n" + *call + "<start_function_response>");
  }
}

TEST(RoundTrip, UnrepresentableArgumentsAreRejected) {
  EXPECT_FALSE(FormatCall("f", Json::parse(R"({"s":"a<escape>b"})")).ok());
  EXPECT_FALSE(FormatCall("f", Json::parse(R"({"a:b":1})")).ok());
  EXPECT_FALSE(FormatCall("f", Json::parse(R"({"o":{"x y":1}})")).ok());
  EXPECT_FALSE(FormatCall("f", Json::parse(R"([1])")).ok());
  EXPECT_FALSE(FormatCall("bad name", Json::object()).ok());
  EXPECT_FALSE(FormatCall("f", Json{{"x", std::nan("")}}).ok());
  auto ok = FormatCall("f", Json::parse(R"({"B":[1,2.5,"x"],"a":{"c":null,"b":true}})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "<start_function_call>call:f{a:{b:true,c:None},B:[1,2.5,<escape>x<escape>]}<end_function_call>");
}

}  // namespace
}  // namespace fgemma::test
