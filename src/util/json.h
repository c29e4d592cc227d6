// JSON helpers over nlohmann::json that turn parse and type errors into Status values naming the
// file and field, so no JSON exception escapes the library.
//
// Nesting depth: nlohmann parses without recursion, but much of what follows a parse recurses over
// the value (its own dump(), copy and comparison; schema parsing, grammar compilation and template
// rendering here), so a document nested 100,000 deep, only ~200 KB of text, would overflow the stack.
// Every parse below therefore refuses text nested deeper than a limit before handing it to
// nlohmann, and code that recurses over a parsed value may rely on that bound.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"

namespace fgemma {

using Json = nlohmann::json;

// The default nesting limit (arrays and objects; scalars add no level). Real inputs stay far below:
// a tool schema at the schema parser's own limit (32 levels, two JSON levels each) inside a request
// is ~70 levels, and tokenizer.json, config files and safetensors headers are under 10. At 128
// levels the recursive code above needs a few tens of KB of stack at most, which any thread has.
inline constexpr int kDefaultJsonMaxDepth = 128;

// Refuses `text` when its arrays and objects nest deeper than `max_depth`. One linear pass that
// counts brackets outside strings, with no recursion, so any text is safe to give it. It does not
// otherwise validate: malformed text is left for the parser to report. The error names `what` and
// the byte offset (from 0) of the bracket that opens the level past the limit:
// "request body: JSON nested deeper than 128 levels at byte 1234".
Status CheckJsonDepth(std::string_view text, const std::string& what, int max_depth = kDefaultJsonMaxDepth);

// Parses `text`; `what` names the source (a path or "request body") in the error. Text nested
// deeper than `max_depth` is refused before parsing (CheckJsonDepth).
Result<Json> ParseJson(std::string_view text, const std::string& what, int max_depth = kDefaultJsonMaxDepth);
Result<Json> ReadJsonFile(const std::string& path, int max_depth = kDefaultJsonMaxDepth);

}  // namespace fgemma
