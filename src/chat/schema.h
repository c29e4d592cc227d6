// The subset of JSON Schema that FunctionGemma tool declarations use, parsed with validation, and
// the validator for call arguments. Types are string, integer, number, boolean, array and object,
// with the keywords listed in docs/tool-schemas.md: each is enforced while decoding (the call
// grammar), checked after it (ValidateArguments), or refused here naming the keyword. No keyword is
// accepted and ignored, except the annotations the table lists (title, default, examples, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_json.h"
#include "chat/schema_pattern.h"
#include "util/json.h"
#include "util/status.h"

namespace fgemma {

// Limits on one tool's `parameters` schema, enforced while it is parsed (before a grammar is compiled
// from it): nesting of items/properties, and nodes (sub-schemas and enum values together).
inline constexpr int kMaxSchemaDepth = 32;
inline constexpr size_t kMaxSchemaNodes = 1024;
// A union (anyOf, a type list) is decoded by running its branches side by side until the value
// tells them apart. Branches whose values start alike (two strings, two objects, integer and
// number) can be open at once; at most this many, counted through nested unions, else the schema
// is refused at parse naming the keyword (the matcher's state stays a small fixed-size value).
inline constexpr int kMaxOpenBranches = 4;

enum class SchemaType { kString, kInteger, kNumber, kBoolean, kArray, kObject };

// "string", "integer", ...
const char* SchemaTypeName(SchemaType type);

struct SchemaProperty;

// A numeric bound as written: the shortest decimal text of its JSON number.
struct NumberBound {
  std::string decimal;
  bool exclusive = false;
};

struct Schema {
  SchemaType type = SchemaType::kObject;
  std::string description;
  std::vector<Json> enum_values;         // empty: no enum constraint
  bool nullable = false;                 // `nullable: true` also admits null
  std::shared_ptr<const Schema> items;   // arrays: the element schema; null admits any element
  std::vector<SchemaProperty> properties;  // objects, in declaration order
  std::vector<std::string> required;
  bool has_properties = false;           // objects: false means free-form (any members)
  bool additional_properties = false;    // objects: undeclared members allowed (`additionalProperties`)
  // integer / number: `minimum`, `maximum` (`exclusiveMinimum` / `exclusiveMaximum` as a number or,
  // OpenAPI 3.0, a boolean beside them; `format` int32 adds its range), `multipleOf` (decimal text).
  std::optional<NumberBound> minimum, maximum;
  std::string multiple_of;
  // strings: `minLength` / `maxLength` in characters (code points), and the automaton of `pattern`
  // (or of a checked `format`), with the keyword it came from for messages.
  uint32_t min_length = 0;
  std::optional<uint32_t> max_length;
  std::shared_ptr<const PatternDfa> pattern;
  std::string pattern_keyword;
  // arrays: `minItems` / `maxItems`.
  uint32_t min_items = 0;
  std::optional<uint32_t> max_items;

  // anyOf of several non-null schemas, or a type list of several types (each branch then takes the
  // keywords of its type): the value is valid iff some branch admits it, or it is null and
  // `nullable`. `type` is unused then. Flattened: no branch is a union itself.
  std::vector<Schema> any_of;
  std::string union_keyword;  // "anyOf" or "type", for messages

  bool IsUnion() const { return !any_of.empty(); }
  // Whether values of `t` may be valid here (the type, or some branch's).
  bool Admits(SchemaType t) const;
  // The schema a value of type `t` is checked against: this one when it is not a union, the union's
  // only branch of that type; null when none or several are.
  const Schema* BranchOf(SchemaType t) const;
  const Schema* FindProperty(std::string_view name) const;
};

struct SchemaProperty {
  std::string name;
  Schema schema;
};

// The property names the template's format_parameters skips without a trace (description, type,
// properties, required, nullable): a parameter so named never reaches the prompt.
bool IsTemplateReservedName(std::string_view name);

// Parses and validates a schema; every error names the field, e.g.
// "tools[2].function.parameters.properties.room.type: unsupported type 'null'". Type names are
// matched case-insensitively ("STRING" appears in Google's examples). Property names that the
// template would silently drop (description, type, properties, required, nullable) and names the
// call syntax cannot carry are rejected. Every keyword is either used or refused with an error
// naming it ("...properties.zip.oneOf: keyword 'oneOf' is not supported"); annotations (title,
// default, examples, $comment, deprecated, x-...) are the only keys read and not applied.
Result<Schema> ParseSchema(const OrderedJson& json, const std::string& path);

// Checks `value` against `schema`; returns one message per violation (empty: valid), each naming
// the field below `path`: "arguments.room: expected string, got integer",
// "arguments: missing required parameter 'room'", "arguments.unit: 'kelvin' is not one of
// [\"celsius\",\"fahrenheit\"]", "arguments.foo: unknown parameter". Members not declared in an
// object's `properties` are violations unless `additionalProperties` allows them (a function
// calling model inventing a parameter is an error worth reporting). An integer-valued float
// (2.0) satisfies "integer".
std::vector<std::string> ValidateArguments(const Schema& schema, const Json& value,
                                           const std::string& path = "arguments");

}  // namespace fgemma
