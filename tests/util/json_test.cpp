// The JSON nesting limit: refused while parsing (a linear pre-scan), with the source and byte offset
// named, before anything that recurses over the value can overflow the stack.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma::test {
namespace {

std::string Nested(size_t depth, char open = '[', char close = ']') {
  return std::string(depth, open) + std::string(depth, close);
}

TEST(JsonDepth, DefaultLimitIsExact) {
  EXPECT_TRUE(ParseJson(Nested(kDefaultJsonMaxDepth), "t").ok());
  auto r = ParseJson(Nested(kDefaultJsonMaxDepth + 1), "t");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  // The offset is that of the bracket opening level 129, counted from 0.
  EXPECT_EQ(r.status().message(), "t: JSON nested deeper than 128 levels at byte 128");
}

TEST(JsonDepth, ObjectsCountAndScalarsDoNot) {
  std::string text;
  for (int i = 0; i < 3; ++i) text += "{\"a\":[";
  text += "1,\"x\",null";
  for (int i = 0; i < 3; ++i) text += "]}";
  EXPECT_TRUE(ParseJson(text, "t", 6).ok());
  auto r = ParseJson(text, "t", 5);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "t: JSON nested deeper than 5 levels at byte 17");
}

TEST(JsonDepth, BracketsInsideStringsAreText) {
  // 1000 brackets inside a string, and escaped quotes that must not end the string early.
  const std::string text = "{\"s\":\"\\\"" + std::string(1000, '[') + "\\\\\",\"t\":\"{{{\\\"]]\"}";
  auto r = ParseJson(text, "t", 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at("s").get<std::string>().size(), 1002u);
  EXPECT_TRUE(CheckJsonDepth("[\"]\", [[]]]", "t", 3).ok());
  EXPECT_FALSE(CheckJsonDepth("[\"]\", [[]]]", "t", 2).ok());
}

TEST(JsonDepth, HundredThousandLevelsRefusedWithoutCrash) {
  for (const std::string& text : {Nested(100000), Nested(100000, '{', '}'), std::string(400000, '['),
                                  "{\"a\":" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}"}) {
    auto r = ParseJson(text, "request body");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("request body: JSON nested deeper than 128 levels at byte "), std::string::npos)
        << r.status().message();
  }
}

TEST(JsonDepth, CallersChooseTheLimit) {
  EXPECT_TRUE(ParseJson(Nested(1000), "t", 1000).ok());
  EXPECT_FALSE(ParseJson(Nested(3), "t", 2).ok());
  EXPECT_TRUE(ParseJson("5", "t", 0).ok());
  EXPECT_FALSE(ParseJson("[]", "t", 0).ok());
}

TEST(JsonDepth, MalformedTextIsStillTheParsersError) {
  // Unbalanced closers do not make the count negative, so depth is not "earned back".
  auto r = ParseJson("]]]]" + Nested(3), "t", 3);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("malformed JSON"), std::string::npos) << r.status().message();
  r = ParseJson("[1,", "t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t: malformed JSON at byte"), std::string::npos) << r.status().message();
}

TEST(JsonDepth, FilesNameTheirPath) {
  const std::string path = TempDir() + "/deep.json";
  ASSERT_TRUE(WriteStringToFile(path, "{\"x\":" + Nested(200000) + "}").ok());
  auto r = ReadJsonFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": JSON nested deeper than 128 levels at byte 132");
  ASSERT_TRUE(WriteStringToFile(path, "{\"x\":" + Nested(10) + "}").ok());
  EXPECT_TRUE(ReadJsonFile(path).ok());
  EXPECT_FALSE(ReadJsonFile(path, 10).ok());
}

}  // namespace
}  // namespace fgemma::test
