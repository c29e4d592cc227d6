// FunctionGemma's tokenizer.json against the reference ids (Hugging Face pipeline and llama.cpp agree
// on every row of golden-dev.json) and a prompt tokenized by llama.cpp with the real GGUF.
#include <gtest/gtest.h>

#include "tokenizer_fixture.h"

namespace fgemma::test {
namespace {

TEST(TokenizerGolden, EveryRowMatchesReferenceIds) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  const auto& rows = GoldenRows();
  ASSERT_EQ(rows.size(), 1000u);
  int mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto ids = tok.Encode(rows[i].text);
    if (ids != rows[i].ids && ++mismatches <= 5) {
      ADD_FAILURE() << "row " << i << " text " << ::testing::PrintToString(rows[i].text) << "\n got      "
                    << ::testing::PrintToString(ids) << "\n expected " << ::testing::PrintToString(rows[i].ids);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerGolden, RoundTripsWhereReferenceDoes) {
  const Tokenizer& tok = FunctionGemmaTokenizer();
  int round_trips = 0;
  for (const auto& row : GoldenRows()) {
    auto reference = tok.Decode(row.ids);
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    if (*reference != row.text) continue;  // e.g. a literal "▁", which decodes to a space
    ++round_trips;
    auto decoded = tok.Decode(tok.Encode(row.text));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, row.text);
  }
  EXPECT_GE(round_trips, 990);
}

// chat/published-examples.md E9: llama.cpp b10621 on the real FunctionGemma GGUF (add_special and
// parse_special), Google's get_weather prompt.
TEST(TokenizerGolden, PublishedGetWeatherPromptMatchesLlamaCpp) {
  const std::string prompt =
      "<start_of_turn>developer\nYou are a model that can do function calling with the following "
      "functions<start_function_declaration>declaration:get_weather{description:<escape>Get current weather "
      "for a location<escape>,parameters:{properties:{location:{description:<escape>City "
      "name<escape>,type:<escape>STRING<escape>}},required:[<escape>location<escape>],type:<escape>OBJECT<escape>}}"
      "<end_function_declaration><end_of_turn>\n<start_of_turn>user\nWhat's the weather in "
      "Paris?<end_of_turn>\n<start_of_turn>model\n";
  const std::vector<int32_t> expected = {
      2,     105,   55060, 107,   3048,  659,   496,   2028,  600,    740,    776,   1292,  11687, 607,   506,
      2269,  5151,  46,    163688, 236787, 828,  236779, 19323, 236782, 7777, 236787, 52,   3407,  1873,  7606,
      573,   496,   4563,  52,    236764, 19031, 29616, 15921, 29616, 7125,  29616, 7777,  236787, 52,   17698,
      1463,  52,    236764, 2084,  236787, 52,   35410, 52,    5237,  15979, 24845, 52,    7125,  52,    1604,
      2084,  236787, 52,   60688, 52,    1807,  47,    106,   107,   105,   2364,  107,   3689,  236789, 236751,
      506,   7606,  528,   9079,  236881, 106,  107,   105,   4368,  107};
  ASSERT_EQ(expected.size(), 85u);
  EXPECT_EQ(FunctionGemmaTokenizer().Encode(prompt, {.add_bos = true}), expected);
}

}  // namespace
}  // namespace fgemma::test
