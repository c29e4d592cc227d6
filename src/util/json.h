// JSON helpers over nlohmann::json that turn parse and type errors into Status values naming the
// file and field, so no JSON exception escapes the library.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"

namespace fgemma {

using Json = nlohmann::json;

// Parses `text`; `what` names the source (a path or "request body") in the error.
Result<Json> ParseJson(std::string_view text, const std::string& what);
Result<Json> ReadJsonFile(const std::string& path);

}  // namespace fgemma
