// Loader rules on small synthetic tokenizer.json files, and every error path naming what is wrong.
#include <gtest/gtest.h>

#include "synthetic_json.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_fixture.h"

namespace fgemma::test {
namespace {

Result<Tokenizer> Load(const Json& j) { return Tokenizer::FromFile(WriteTokenizerJson(j.dump())); }

std::vector<int32_t> Ids(const Tokenizer& t, std::initializer_list<const char*> tokens) {
  std::vector<int32_t> ids;
  for (const char* s : tokens) ids.push_back(t.TokenId(s));
  return ids;
}

void ExpectError(const Result<Tokenizer>& r, ErrorCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

TEST(TokenizerLoader, LowestRankMergesFirstLeftmostOnTies) {
  auto t = Load(SyntheticTokenizerJson({"a", "b", "ab", "ba"}, {{"a", "b"}, {"b", "a"}}));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->Encode("aba"), Ids(*t, {"ab", "a"}));
  auto u = Load(SyntheticTokenizerJson({"a", "b", "ab", "ba"}, {{"b", "a"}, {"a", "b"}}));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->Encode("aba"), Ids(*u, {"a", "ba"}));
  EXPECT_EQ(u->Encode("abab"), Ids(*u, {"a", "ba", "b"}));
  EXPECT_EQ(t->Encode("abab"), Ids(*t, {"ab", "ab"}));
}

TEST(TokenizerLoader, SpacesBecomeMarkersAndUnknownCharactersBytes) {
  auto t = Load(SyntheticTokenizerJson({"a", "\u2581", "\u2581a"}, {{"\u2581", "a"}}));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->Encode("a a"), Ids(*t, {"a", "\u2581a"}));
  EXPECT_EQ(t->Encode("é"), Ids(*t, {"<0xC3>", "<0xA9>"}));
  auto text = t->Decode(t->Encode("a aé "));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "a aé ");
  EXPECT_EQ(t->bos_id(), -1);
  EXPECT_TRUE(t->eos_ids().empty());
}

TEST(TokenizerLoader, LegacyMergeStringsPrependAndIgnoreMerges) {
  Json j = SyntheticTokenizerJson({"a", "b", "c", "ab", "abc", "\u2581", "\u2581a"}, {});
  j["model"]["merges"] = {"a b", "\u2581 a"};
  auto t = Load(j);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->Encode("abc"), Ids(*t, {"ab", "c"}));  // no merge builds "abc"

  j["model"]["ignore_merges"] = true;
  t = Load(j);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Encode("abc"), Ids(*t, {"abc"}));  // the whole stretch is a token

  Json prepend = {{"type", "Prepend"}, {"prepend", "\u2581"}};
  Json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", Json::array({prepend, replace})}};
  j["model"]["ignore_merges"] = false;
  t = Load(j);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->Encode("ab"), Ids(*t, {"\u2581", "ab"}));  // "a b" has the lower rank
  EXPECT_EQ(t->Encode("a"), Ids(*t, {"\u2581a"}));
}

TEST(TokenizerLoader, AddedTokensAndBosFromPostProcessor) {
  Json j = SyntheticTokenizerJson({"<bos>", "<ctl>", "<ctl_long>", "\n\n", "x"}, {});
  j["added_tokens"] = {{{"id", 256}, {"content", "<bos>"}, {"special", true}},
                       {{"id", 257}, {"content", "<ctl>"}, {"special", false}},
                       {{"id", 258}, {"content", "<ctl_long>"}, {"special", false}},
                       {{"id", 259}, {"content", "\n\n"}, {"special", false}}};
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}}}}};
  auto t = Load(j);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->bos_id(), 256);
  EXPECT_TRUE(t->IsSpecial(256));
  EXPECT_FALSE(t->IsSpecial(257));
  EXPECT_EQ(t->Encode("x<ctl_long>x<ctl>\n\n", {.add_bos = true}), (std::vector<int32_t>{256, 260, 258, 260, 257, 259}));
  auto plain = t->Encode("<ctl>\n\n", {.parse_special = false});
  EXPECT_EQ(plain.back(), 259);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 257), 0);
  auto skipped = t->Decode(std::vector<int32_t>{256, 260, 257}, {.skip_special = true});
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(*skipped, "x<ctl>");
}

TEST(TokenizerErrors, MissingFileOrDirectory) {
  ExpectError(Tokenizer::FromFile("/nonexistent/fgemma/tokenizer.json"), ErrorCode::kNotFound, "/nonexistent/fgemma/tokenizer.json");
  const std::string empty_dir = TempDir();
  ExpectError(Tokenizer::FromFile(empty_dir), ErrorCode::kNotFound, "no tokenizer.json");
}

TEST(TokenizerErrors, GgufIsNotWiredYet) {
  ExpectError(Tokenizer::FromFile(FixturePath("models/mini-bf16.gguf")), ErrorCode::kUnsupported, "GGUF");
}

TEST(TokenizerErrors, MalformedJsonNamesFieldAndOffset) {
  const std::string good = SyntheticTokenizerJson({"a"}, {}).dump();
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson(good.substr(0, good.size() / 2))), ErrorCode::kCorruptFile, "byte ");
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson("{\"model\": {\"vocab\": {\"a\": 1,}}}")), ErrorCode::kCorruptFile,
              "model.vocab: byte 28: expected a string");
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson(good + "x")), ErrorCode::kCorruptFile, "after the JSON document");
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson("{\"model\": {\"vocab\": {\"\\ud800\": 0}}}")), ErrorCode::kCorruptFile,
              "surrogate");
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson("")), ErrorCode::kCorruptFile, "ends");
  ExpectError(Tokenizer::FromFile(WriteTokenizerJson("[]")), ErrorCode::kCorruptFile, "expected '{'");
}

TEST(TokenizerErrors, WrongModelOrPipeline) {
  Json j = SyntheticTokenizerJson({"a"}, {});
  j["model"]["type"] = "WordPiece";
  ExpectError(Load(j), ErrorCode::kUnsupported, "\"WordPiece\"");

  j = SyntheticTokenizerJson({"a"}, {});
  j.erase("model");
  ExpectError(Load(j), ErrorCode::kCorruptFile, "no \"model\"");

  j = SyntheticTokenizerJson({"a"}, {});
  j["model"]["byte_fallback"] = false;
  ExpectError(Load(j), ErrorCode::kUnsupported, "byte_fallback");

  j = SyntheticTokenizerJson({"a"}, {});
  j["pre_tokenizer"] = {{"type", "ByteLevel"}};
  ExpectError(Load(j), ErrorCode::kUnsupported, "pre_tokenizer: ByteLevel");

  j = SyntheticTokenizerJson({"a"}, {});
  j["normalizer"] = {{"type", "NFKC"}};
  ExpectError(Load(j), ErrorCode::kUnsupported, "normalizer");

  j = SyntheticTokenizerJson({"a"}, {});
  j["decoder"] = {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}};
  ExpectError(Load(j), ErrorCode::kUnsupported, "decoder");
}

TEST(TokenizerErrors, InconsistentVocabularyOrMerges) {
  Json j = SyntheticTokenizerJson({"a", "b"}, {{"a", "zz"}});
  ExpectError(Load(j), ErrorCode::kCorruptFile, "model.merges[0]: \"zz\" is not in model.vocab");

  j = SyntheticTokenizerJson({"a", "b"}, {{"a", "b"}});  // "ab" is missing
  ExpectError(Load(j), ErrorCode::kCorruptFile, "\"ab\" is not in model.vocab");

  j = SyntheticTokenizerJson({"a"}, {});
  j["model"]["vocab"]["a"] = 999;
  ExpectError(Load(j), ErrorCode::kCorruptFile, "\"a\" has id 999");

  j = SyntheticTokenizerJson({"a"}, {});
  j["model"]["vocab"].erase("<0x41>");
  j["model"]["vocab"]["a"] = 65;
  ExpectError(Load(j), ErrorCode::kUnsupported, "<0x41> is missing");

  j = SyntheticTokenizerJson({"a"}, {});
  j["added_tokens"] = {{{"id", 256}, {"content", "b"}, {"special", true}}};
  ExpectError(Load(j), ErrorCode::kCorruptFile, "added_tokens[0]");

  j = SyntheticTokenizerJson({"a"}, {});
  j["added_tokens"] = {{{"id", 256}, {"content", "a"}, {"lstrip", true}}};
  ExpectError(Load(j), ErrorCode::kUnsupported, "lstrip");
}

TEST(TokenizerErrors, OutOfRangeIdsNameTheId) {
  const Tokenizer& t = FunctionGemmaTokenizer();
  auto r = t.Decode(std::vector<int32_t>{2, 262144});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("token id 262144 at position 1"), std::string::npos) << r.status().message();
  r = t.Decode(std::vector<int32_t>{-1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token id -1"), std::string::npos);

  StreamDecoder stream(t);
  auto p = stream.Push(1 << 30);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(std::to_string(1 << 30)), std::string::npos);
  EXPECT_EQ(t.TokenText(-5), "");
  EXPECT_FALSE(t.IsSpecial(300000));
}

TEST(TokenizerApi, FunctionGemmaMetadata) {
  const Tokenizer& t = FunctionGemmaTokenizer();
  EXPECT_EQ(t.vocab_size(), 262144);
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.eos_ids(), (std::vector<int32_t>{1, 106}));  // generation_config.json
  EXPECT_TRUE(t.IsEos(106));
  EXPECT_EQ(t.TokenId("<start_function_call>"), 48);
  EXPECT_EQ(t.TokenId("<escape>"), 52);
  EXPECT_EQ(t.TokenId("no such token"), -1);
  EXPECT_EQ(t.TokenText(105), "<start_of_turn>");
  EXPECT_TRUE(t.IsSpecial(105));
  EXPECT_FALSE(t.IsSpecial(48));  // kept by skip_special: callers parse function calls from text
  auto text = t.Decode(std::vector<int32_t>{2, 105, 4368, 107, 48, 106}, {.skip_special = true});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "model\n<start_function_call>");
  Tokenizer copy = t;  // copies share the tables
  EXPECT_EQ(copy.Encode("Hello world"), (std::vector<int32_t>{9259, 1902}));
}

}  // namespace
}  // namespace fgemma::test
