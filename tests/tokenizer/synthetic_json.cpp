#include "synthetic_json.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {

Json SyntheticTokenizerJson(const std::vector<std::string>& tokens,
                            const std::vector<std::pair<std::string, std::string>>& merges) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = b;
  }
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = 256 + static_cast<int>(i);
  Json merge_list = Json::array();
  for (const auto& [l, r] : merges) merge_list.push_back({l, r});
  return Json{
      {"version", "1.0"},
      {"added_tokens", Json::array()},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}},
      {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
      {"post_processor", nullptr},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", true}, {"byte_fallback", true},
        {"ignore_merges", false}, {"vocab", vocab}, {"merges", merge_list}}}};
}

std::string WriteTokenizerJson(const std::string& text) {
  const std::string path = TempDir() + "/tokenizer.json";
  const Status s = WriteStringToFile(path, text);
  if (!s.ok()) ADD_FAILURE() << s.ToString();
  return path;
}

}  // namespace fgemma::test
