// The subset of JSON Schema that FunctionGemma tool declarations use, parsed with validation, and
// the validator for call arguments. Types are string (optionally with enum), integer, number,
// boolean, array (with optional `items`) and object (with optional `properties` / `required`).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_json.h"
#include "util/json.h"
#include "util/status.h"

namespace fgemma {

// Limits on one tool's `parameters` schema, enforced while it is parsed (before a grammar is compiled
// from it): nesting of items/properties, and nodes (sub-schemas and enum values together).
inline constexpr int kMaxSchemaDepth = 32;
inline constexpr size_t kMaxSchemaNodes = 1024;

enum class SchemaType { kString, kInteger, kNumber, kBoolean, kArray, kObject };

// "string", "integer", ...
const char* SchemaTypeName(SchemaType type);

struct SchemaProperty;

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
// call syntax cannot carry are rejected. Unknown annotation keys (title, default, format, ...) are
// ignored; composition keywords (anyOf, oneOf, allOf, not, $ref) are rejected.
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
