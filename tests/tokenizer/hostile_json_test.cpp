// Hostile tokenizer.json: a pipeline step whose `type` is not a string, and nesting deep enough to
// overflow a recursive reader, are refused with a Status naming the field; nothing throws or crashes.
#include <gtest/gtest.h>

#include <string>

#include "synthetic_json.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace fgemma::test {
namespace {

Result<Tokenizer> LoadText(const std::string& text) {
  Result<Tokenizer> t = Internal("not run");
  EXPECT_NO_THROW(t = Tokenizer::FromFile(WriteTokenizerJson(text)));
  return t;
}

Result<Tokenizer> LoadJson(const Json& j) { return LoadText(j.dump()); }

void ExpectRefused(const Result<Tokenizer>& r, ErrorCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

Json Base() { return SyntheticTokenizerJson({"a"}, {}); }

TEST(TokenizerHostile, NonStringPipelineTypesAreRefused) {
  Json j = Base();
  j["normalizer"]["type"] = 5;
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "normalizer.type: expected a string, got a number");

  j = Base();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {Base()["normalizer"], {{"type", {1}}}}}};
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "normalizer.normalizers[1].type: expected a string, got an array");

  j = Base();
  j["pre_tokenizer"]["type"] = true;
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "pre_tokenizer.type: expected a string, got a boolean");

  j = Base();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", nullptr}}}}};
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "pre_tokenizer.pretokenizers[0].type: expected a string, got null");

  j = Base();
  j["decoder"]["type"] = Json::object();
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "decoder.type: expected a string, got an object");

  j = Base();
  j["decoder"]["decoders"][2]["type"] = 1.5;
  ExpectRefused(LoadJson(j), ErrorCode::kCorruptFile, "decoder.decoders[2].type: expected a string, got a number");
}

TEST(TokenizerHostile, OtherMembersOfTheWrongTypeAreUnsupportedNotThrown) {
  Json j = Base();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {Base()["normalizer"], {{"type", "Prepend"}, {"prepend", 5}}}}};
  ExpectRefused(LoadJson(j), ErrorCode::kUnsupported, "normalizer: step Prepend is not supported");

  j = Base();
  j["pre_tokenizer"]["invert"] = "no";
  EXPECT_TRUE(LoadJson(j).ok());  // a non-boolean invert reads as absent (false)

  j = Base();
  j["normalizer"]["content"] = 7;
  ExpectRefused(LoadJson(j), ErrorCode::kUnsupported, "normalizer: step Replace is not supported");

  j = Base();
  j["normalizer"] = 5;
  ExpectRefused(LoadJson(j), ErrorCode::kUnsupported, "normalizer: step 5 is not supported");

  j = Base();
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {{{"SpecialToken", {{"id", 5}}}}}}};
  EXPECT_TRUE(LoadJson(j).ok());  // no usable id: the default <bos> lookup

  j = Base();
  j["model"]["dropout"] = "x";
  ExpectRefused(LoadJson(j), ErrorCode::kUnsupported, "dropout");
  j = Base();
  j["model"]["unk_token"] = 3;
  EXPECT_TRUE(LoadJson(j).ok());
}

// Every member of a valid file replaced in turn by a value of each type: a Status, never a throw.
TEST(TokenizerHostile, NoMemberOfTheWrongTypeThrows) {
  const Json base = Base();
  for (const char* section : {"normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"}) {
    for (const Json& v : {Json(5), Json(true), Json(nullptr), Json("x"), Json::array(), Json::object(), Json{{"type", 5}},
                          Json::array({Json{{"type", 5}}})}) {
      Json j = base;
      j[section] = v;
      (void)LoadJson(j);
      if (base[section].is_object()) {
        for (const auto& [key, member] : base[section].items()) {
          Json k = base;
          k[section][key] = v;
          (void)LoadJson(k);
        }
      }
    }
  }
}

std::string WithMember(const std::string& member) {
  const std::string good = Base().dump();
  return "{" + member + "," + good.substr(1);
}

TEST(TokenizerHostile, DeepNestingIsRefusedWithTheOffset) {
  const size_t deep = 100000;
  const std::string nested = std::string(deep, '[') + std::string(deep, ']');
  // A member the loader skips: its bracket at byte 9 opens level 2, so level 129 opens at 136.
  ExpectRefused(LoadText(WithMember("\"extra\":" + nested)), ErrorCode::kCorruptFile,
                "extra: byte 136: JSON nested deeper than 128 levels");
  // Sections handed to the JSON parser, and the model's small options.
  ExpectRefused(LoadText(WithMember("\"normalizer\":" + nested)), ErrorCode::kCorruptFile,
                "normalizer: byte 141: JSON nested deeper than 128 levels");
  ExpectRefused(LoadText("{\"model\":{\"dropout\":" + nested + "}}"), ErrorCode::kCorruptFile,
                "model.dropout: byte 146: JSON nested deeper than 128 levels");
  ExpectRefused(LoadText("{\"added_tokens\":[{\"x\":" + nested + "}]}"), ErrorCode::kCorruptFile,
                "JSON nested deeper than 128 levels");
  // Unclosed, and objects rather than arrays.
  ExpectRefused(LoadText(WithMember("\"extra\":" + std::string(deep, '['))), ErrorCode::kCorruptFile,
                "JSON nested deeper than 128 levels");
  std::string objects;
  for (size_t i = 0; i < deep; ++i) objects += "{\"a\":";
  ExpectRefused(LoadText(WithMember("\"extra\":" + objects)), ErrorCode::kCorruptFile, "JSON nested deeper than 128 levels");
  // Up to the limit is fine: 127 levels inside the document's own object.
  EXPECT_TRUE(LoadText(WithMember("\"extra\":" + std::string(127, '[') + std::string(127, ']'))).ok());
  ExpectRefused(LoadText(WithMember("\"extra\":" + std::string(128, '[') + std::string(128, ']'))), ErrorCode::kCorruptFile,
                "JSON nested deeper than 128 levels");
}

}  // namespace
}  // namespace fgemma::test
