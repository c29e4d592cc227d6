// JSON as the chat layer keeps it: insertion-ordered, because the template's dictsort keeps the
// original order of keys that compare equal case-insensitively, and iterating a mapping (a
// `required` given as an object, say) follows insertion order, as a Python dict does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/json.h"
#include "util/status.h"

namespace fgemma {

using OrderedJson = nlohmann::ordered_json;

// Parses `text` keeping key order; `what` names the source in the error ("request.json: malformed
// JSON at byte 17: ..."). Like Python's json, a repeated key keeps its first position and last value.
// Text nested deeper than `max_depth` is refused before parsing, as by ParseJson (util/json.h): the
// renderer, schema parser and dump() recurse over the result, and rely on that bound.
Result<OrderedJson> ParseOrderedJson(std::string_view text, const std::string& what,
                                     int max_depth = kDefaultJsonMaxDepth);

// "string", "integer", "number", "boolean", "array", "object" or "null": for error messages.
const char* JsonKindName(const OrderedJson& value);
const char* JsonKindName(const Json& value);

// value.dump() for error messages; never throws (invalid UTF-8 is replaced).
std::string JsonText(const OrderedJson& value);
std::string JsonText(const Json& value);

// Appends ".key" or "[i]" to a field path such as "tools[2].function.parameters".
std::string FieldPath(const std::string& base, std::string_view key);
std::string FieldPath(const std::string& base, size_t index);

}  // namespace fgemma
