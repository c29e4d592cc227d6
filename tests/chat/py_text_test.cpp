// Python semantics the template relies on: repr(float), str.strip(), str.lower().
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "chat/py_text.h"
#include "chat/template_id.h"
#include "test_support.h"
#include "util/mapped_file.h"
#include "chat_test_util.h"

namespace fgemma::test {
namespace {

TEST(PyText, FloatReprMatchesCPython) {
  // Expected values printed by CPython 3.11's repr().
  const std::pair<double, const char*> cases[] = {
      {0.5, "0.5"}, {-1.0, "-1.0"}, {2.0, "2.0"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {1e-5, "1e-05"},
      {0.0001, "0.0001"}, {1.5e16, "1.5e+16"}, {123456789012345678.0, "1.2345678901234568e+17"}, {-0.0, "-0.0"},
      {0.0, "0.0"}, {1e22, "1e+22"}, {5e-324, "5e-324"}, {0.1, "0.1"}, {0.30000000000000004, "0.30000000000000004"},
      {1234567890123456.0, "1234567890123456.0"}, {12345678901234567.0, "1.2345678901234568e+16"}, {2.5e-7, "2.5e-07"},
      {1e300, "1e+300"}, {123456789.123, "123456789.123"}, {3.25, "3.25"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
      {std::numeric_limits<double>::infinity(), "inf"}, {-std::numeric_limits<double>::infinity(), "-inf"}, {std::nan(""), "nan"}};
  for (const auto& [v, want] : cases) EXPECT_EQ(py::FloatRepr(v), want);
}

TEST(PyText, StripRemovesUnicodeWhitespace) {
  EXPECT_EQ(py::Strip("  a b \n"), "a b");
  EXPECT_EQ(py::Strip("\xc2\xa0\xe3\x80\x80x\xe2\x80\xa8\x1f"), "x");  // nbsp, ideographic space, line separator, \x1f
  EXPECT_EQ(py::Strip("\xe2\x80\x8bx"), "\xe2\x80\x8bx");                // zero-width space is not whitespace
  EXPECT_EQ(py::Strip(" \t\n"), "");
  EXPECT_EQ(py::Strip(""), "");
}

TEST(PyText, LowerIsUnicodeAware) {
  EXPECT_EQ(py::Lower("ABC xyz"), "abc xyz");
  EXPECT_EQ(py::Lower("État Ärger ΣΙΓΜΑ ИМЯ"), "état ärger σιγμα имя");
  EXPECT_EQ(py::Lower("\xc4\xb0"), "i\xcc\x87");  // İ lowercases to two code points
  EXPECT_EQ(py::Lower("Ａ"), "ａ");                // fullwidth
  EXPECT_EQ(py::Lower("東京"), "東京");
}

TEST(PyText, CodePoints) {
  const auto cps = py::CodePoints("aé東🙂");
  ASSERT_EQ(cps.size(), 4u);
  EXPECT_EQ(cps[3], "🙂");
}

TEST(TemplateId, RecognizesTheOfficialTemplateAndTheVariant) {
  auto official = ReadFileToString(FixturePath("chat/chat_template.jinja"));
  auto variant = ReadFileToString(FixturePath("chat/chat_template.variant-default-preamble.jinja"));
  auto config = ReadFileToString(FixturePath("models/mini-bf16/tokenizer_config.json"));
  ASSERT_TRUE(official.ok() && variant.ok() && config.ok());
  EXPECT_EQ(*IdentifyChatTemplate(*official), TemplateKind::kOfficial);
  EXPECT_EQ(*IdentifyChatTemplate(*variant), TemplateKind::kDefaultPreamble);
  EXPECT_EQ(*IdentifyChatTemplate(J(*config)["chat_template"].get<std::string>()), TemplateKind::kOfficial);
  // Line ends and surrounding whitespace do not matter to jinja2's output here.
  std::string crlf;
  for (char c : *official) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(*IdentifyChatTemplate("\n" + crlf + "\n\n"), TemplateKind::kOfficial);
  // Any other change is unsupported, with a message that says so.
  std::string edited = *official;
  edited.replace(edited.find("<end_of_turn>"), 13, "<end_of_turn >");
  auto r = IdentifyChatTemplate(edited);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("resembles FunctionGemma's but differs"), std::string::npos) << r.status().message();
  auto gemma = IdentifyChatTemplate("{{ bos_token }}{% for message in messages %}<start_of_turn>...{% endfor %}");
  ASSERT_FALSE(gemma.ok());
  EXPECT_NE(gemma.status().message().find("not a FunctionGemma template"), std::string::npos);
}

}  // namespace
}  // namespace fgemma::test
