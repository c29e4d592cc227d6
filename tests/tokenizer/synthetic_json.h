// Small tokenizer.json documents for tests of loader rules and error paths.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/json.h"

namespace fgemma::test {

// A valid Gemma-style tokenizer.json: the 256 byte tokens, then `tokens` (ids from 256 on), then
// `merges` as [left, right] pairs. Tests edit the returned JSON to break it.
Json SyntheticTokenizerJson(const std::vector<std::string>& tokens,
                            const std::vector<std::pair<std::string, std::string>>& merges);
// Writes `text` as tokenizer.json in a fresh directory and returns the file's path.
std::string WriteTokenizerJson(const std::string& text);

}  // namespace fgemma::test
