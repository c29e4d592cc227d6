#include "chat/schema.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "chat/call_format.h"
#include "chat/schema_number.h"

namespace fgemma {
namespace {

constexpr int kMaxDepth = kMaxSchemaDepth;

Result<SchemaType> TypeNamed(const OrderedJson& name, const std::string& path) {
  if (!name.is_string()) return InvalidArgument(path + ".type: must be a string, got " + JsonKindName(name));
  std::string lower = name.get<std::string>();
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (lower == "string") return SchemaType::kString;
  if (lower == "integer") return SchemaType::kInteger;
  if (lower == "number") return SchemaType::kNumber;
  if (lower == "boolean") return SchemaType::kBoolean;
  if (lower == "array") return SchemaType::kArray;
  if (lower == "object") return SchemaType::kObject;
  return InvalidArgument(path + ".type: unsupported type '" + name.get<std::string>() + "'");
}

// One type name, or a type list (its "null" sets `*nullable`); the types in declaration order,
// each once. "integer" beside "number" is dropped: with the same keywords a number admits it.
Result<std::vector<SchemaType>> ParseTypes(const OrderedJson& json, const std::string& path, bool* nullable) {
  const auto it = json.find("type");
  if (it == json.end()) return InvalidArgument(path + ".type: missing");
  std::vector<SchemaType> types;
  if (!it->is_array()) {
    FGEMMA_TRY(SchemaType t, TypeNamed(*it, path));
    return std::vector<SchemaType>{t};
  }
  for (const auto& t : *it) {
    if (t.is_string() && t.get<std::string>() == "null") {
      *nullable = true;
      continue;
    }
    FGEMMA_TRY(SchemaType type, TypeNamed(t, path));
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  if (types.empty()) return Unsupported(path + ".type: a value that can only be null is not supported");
  if (std::find(types.begin(), types.end(), SchemaType::kNumber) != types.end())
    types.erase(std::remove(types.begin(), types.end(), SchemaType::kInteger), types.end());
  return types;
}

bool MatchesScalarType(SchemaType type, const Json& v) {
  switch (type) {
    case SchemaType::kString: return v.is_string();
    case SchemaType::kInteger:
      return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                       std::floor(v.get<double>()) == v.get<double>());
    case SchemaType::kNumber: return v.is_number();
    case SchemaType::kBoolean: return v.is_boolean();
    case SchemaType::kArray: return v.is_array();
    case SchemaType::kObject: return v.is_object();
  }
  return false;
}

// Counts one more node against kMaxSchemaNodes; `path` is where the limit was reached.
Status CountNodes(size_t n, const std::string& path, size_t* nodes) {
  *nodes += n;
  if (*nodes > kMaxSchemaNodes)
    return OutOfRange(path + ": schema has more than " + std::to_string(kMaxSchemaNodes) +
                      " nodes (sub-schemas and enum values), the limit is " + std::to_string(kMaxSchemaNodes));
  return Status::Ok();
}

// `enum`, or `const` (an enum of one value).
Status ParseEnum(const OrderedJson& json, const std::string& path, size_t* nodes, Schema* s) {
  const bool is_const = json.contains("const");
  if (is_const && json.contains("enum")) return Unsupported(path + ".const: const beside enum is not supported; use one");
  const auto it = json.find(is_const ? "const" : "enum");
  if (it == json.end()) return Status::Ok();
  const std::string field = path + (is_const ? ".const" : ".enum");
  if (s->type == SchemaType::kArray || s->type == SchemaType::kObject)
    return InvalidArgument(field + ": " + (is_const ? "const" : "enum") + " is only supported for string, integer, number and boolean");
  if (is_const) {
    FGEMMA_RETURN_IF_ERROR(CountNodes(1, field, nodes));
    Json v(*it);
    if (!MatchesScalarType(s->type, v)) return InvalidArgument(field + ": expected " + SchemaTypeName(s->type) + ", got " + JsonKindName(v));
    s->enum_values.push_back(std::move(v));
    return Status::Ok();
  }
  if (!it->is_array() || it->empty()) return InvalidArgument(field + ": must be a non-empty array");
  FGEMMA_RETURN_IF_ERROR(CountNodes(it->size(), field, nodes));  // counted before any is copied
  for (size_t i = 0; i < it->size(); ++i) {
    Json v((*it)[i]);
    if (!MatchesScalarType(s->type, v))
      return InvalidArgument(FieldPath(field, i) + ": expected " + SchemaTypeName(s->type) + ", got " + JsonKindName(v));
    s->enum_values.push_back(std::move(v));
  }
  return Status::Ok();
}

Status ParseObjectMembers(const OrderedJson& json, const std::string& path, int depth, size_t* nodes, Schema* s);

// Keywords read and not applied: documentation for people and tools.
bool IsAnnotation(std::string_view key) {
  static constexpr std::string_view kAnnotations[] = {"title", "default", "example", "examples", "$comment", "$schema",
                                                      "$id", "deprecated", "readOnly", "writeOnly", "propertyOrdering"};
  return key.starts_with("x-") || std::find(std::begin(kAnnotations), std::end(kAnnotations), key) != std::end(kAnnotations);
}

// The type a type-specific keyword belongs to ("" for keywords of every type, "?" for unknown ones).
std::string_view KeywordType(std::string_view key) {
  for (std::string_view k : {"type", "description", "nullable", "enum", "const", "format"}) {
    if (key == k) return "";
  }
  for (std::string_view k : {"minLength", "maxLength", "pattern"}) {
    if (key == k) return "string";
  }
  for (std::string_view k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
    if (key == k) return "number";
  }
  for (std::string_view k : {"items", "minItems", "maxItems", "uniqueItems"}) {
    if (key == k) return "array";
  }
  for (std::string_view k : {"properties", "required", "additionalProperties"}) {
    if (key == k) return "object";
  }
  return "?";
}

// Every key is a keyword this engine applies to the schema's type, or an annotation.
Status CheckKeywords(const OrderedJson& json, const std::string& path, SchemaType type) {
  for (const auto& [key, value] : json.items()) {
    if (IsAnnotation(key)) continue;
    const std::string_view owner = KeywordType(key);
    const std::string field = FieldPath(path, key);
    if (owner == "?") {
      return Unsupported(field + ": keyword '" + key + "' is not supported (the keywords a tool may use are listed in docs/tool-schemas.md)");
    }
    const bool numeric = type == SchemaType::kInteger || type == SchemaType::kNumber;
    if (!owner.empty() && !(owner == "number" ? numeric : owner == SchemaTypeName(type))) {
      return InvalidArgument(field + ": only " + (owner == "number" ? "integers and numbers" : std::string(owner) + "s") + " have " +
                             key + " (type is " + SchemaTypeName(type) + ")");
    }
  }
  return Status::Ok();
}

Result<uint32_t> Count(const OrderedJson& json, const char* key, const std::string& path) {
  const auto& v = json[key];
  const std::string field = FieldPath(path, key);
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    return InvalidArgument(field + ": must be a non-negative integer, got " + JsonKindName(v));
  const double d = v.get<double>();
  if (d < 0 || d > 1e6) return InvalidArgument(field + ": must be between 0 and 1000000");
  return static_cast<uint32_t>(d);
}

// minimum / maximum with their exclusive forms (JSON Schema's number or OpenAPI 3.0's boolean),
// multipleOf, and format int32.
Status ParseNumberKeywords(const OrderedJson& json, const std::string& path, Schema* s) {
  auto bound = [&](const char* key, const char* exclusive_key, std::optional<NumberBound>* out) -> Status {
    if (auto it = json.find(key); it != json.end()) {
      if (!it->is_number()) return InvalidArgument(FieldPath(path, key) + ": must be a number, got " + JsonKindName(*it));
      *out = NumberBound{DecimalText(Json(*it)), false};
    }
    if (auto it = json.find(exclusive_key); it != json.end()) {
      const std::string field = FieldPath(path, exclusive_key);
      if (it->is_boolean()) {
        if (!out->has_value()) return InvalidArgument(field + ": a boolean " + exclusive_key + " needs " + key + " beside it");
        (*out)->exclusive = it->get<bool>();
      } else if (it->is_number()) {
        const NumberBound ex{DecimalText(Json(*it)), true};
        // Both given: the tighter one holds.
        const int cmp = out->has_value() ? CompareDecimal(ex.decimal, (*out)->decimal) : 0;
        const bool lower = std::string_view(key) == "minimum";
        if (!out->has_value() || (lower ? cmp >= 0 : cmp <= 0)) *out = ex;
      } else {
        return InvalidArgument(field + ": must be a number or a boolean, got " + JsonKindName(*it));
      }
    }
    return Status::Ok();
  };
  FGEMMA_RETURN_IF_ERROR(bound("minimum", "exclusiveMinimum", &s->minimum));
  FGEMMA_RETURN_IF_ERROR(bound("maximum", "exclusiveMaximum", &s->maximum));
  if (auto it = json.find("multipleOf"); it != json.end()) {
    const std::string field = FieldPath(path, "multipleOf");
    if (!it->is_number() || !(it->get<double>() > 0)) return InvalidArgument(field + ": must be a number above 0");
    s->multiple_of = DecimalText(Json(*it));
    bool exact = false;
    const SchemaUnits units = DecimalToUnits(s->multiple_of, Rounding::kFloor, &exact);
    if (!exact || units <= 0 || units >= kUnitsClamp)
      return Unsupported(field + ": multipleOf " + s->multiple_of + " is not supported (it must be at least 1e-15, with at most 15 decimals)");
  }
  if (s->minimum && s->maximum) {
    const int cmp = CompareDecimal(s->minimum->decimal, s->maximum->decimal);
    if (cmp > 0 || (cmp == 0 && (s->minimum->exclusive || s->maximum->exclusive)))
      return InvalidArgument(path + ": no number is within minimum " + s->minimum->decimal + " and maximum " + s->maximum->decimal);
  }
  return Status::Ok();
}

Status ParseStringKeywords(const OrderedJson& json, const std::string& path, Schema* s) {
  if (json.contains("minLength")) {
    FGEMMA_TRY(s->min_length, Count(json, "minLength", path));
  }
  if (json.contains("maxLength")) {
    FGEMMA_TRY(s->max_length, Count(json, "maxLength", path));
  }
  if (s->max_length && *s->max_length < s->min_length)
    return InvalidArgument(FieldPath(path, "maxLength") + ": below minLength");
  if (auto it = json.find("pattern"); it != json.end()) {
    const std::string field = FieldPath(path, "pattern");
    if (!it->is_string()) return InvalidArgument(field + ": must be a string, got " + JsonKindName(*it));
    FGEMMA_TRY(s->pattern, CompilePattern(it->get<std::string>(), field));
    s->pattern_keyword = "pattern";
  }
  return Status::Ok();
}

// `format`: for strings the checked formats (an automaton like a pattern) and Gemini's "enum"
// annotation; for integers int32 (a range) and int64 (what the grammar writes anyway); for numbers
// float and double (any number). Any other format is refused rather than ignored.
Status ParseFormat(const OrderedJson& json, const std::string& path, Schema* s) {
  auto it = json.find("format");
  if (it == json.end()) return Status::Ok();
  const std::string field = FieldPath(path, "format");
  if (!it->is_string()) return InvalidArgument(field + ": must be a string, got " + JsonKindName(*it));
  const std::string format = it->get<std::string>();
  if (s->type == SchemaType::kString) {
    if (format == "enum") return Status::Ok();
    const std::string_view pattern = FormatPattern(format);
    if (!pattern.empty()) {
      if (s->pattern) return Unsupported(field + ": format '" + format + "' together with pattern is not supported; use one");
      FGEMMA_TRY(s->pattern, CompilePattern(pattern, field));
      s->pattern_keyword = "format " + format;
      return Status::Ok();
    }
  } else if (s->type == SchemaType::kInteger) {
    if (format == "int64") return Status::Ok();
    if (format == "int32") {
      if (!s->minimum || CompareDecimal(s->minimum->decimal, "-2147483648") < 0) s->minimum = NumberBound{"-2147483648", false};
      if (!s->maximum || CompareDecimal(s->maximum->decimal, "2147483647") > 0) s->maximum = NumberBound{"2147483647", false};
      return Status::Ok();
    }
  } else if (s->type == SchemaType::kNumber) {
    if (format == "float" || format == "double") return Status::Ok();
  }
  return Unsupported(field + ": format '" + format + "' is not supported for " + SchemaTypeName(s->type) +
                     " (see docs/tool-schemas.md for the formats checked)");
}

std::vector<std::string> Violations(const Schema& s, const Json& v, const std::string& path);

Result<Schema> Parse(const OrderedJson& json, const std::string& path, int depth, size_t* nodes);

bool IsNullSchema(const OrderedJson& j) {
  if (!j.is_object() || !j.contains("type") || j["type"] != "null") return false;
  for (const auto& [key, value] : j.items()) {
    if (key != "type" && key != "description" && !IsAnnotation(key)) return false;
  }
  return true;
}

// How many branches of a union can be open at once while a value of `s` is written, per class of
// the value's first symbol (<escape>, digit or '-', t/f, n, '[', '{'): branches of different
// classes part at the first symbol; a union nested in an array item or a property multiplies.
using OpenCounts = std::array<int, 6>;
int Widest(const OpenCounts& c) { return *std::max_element(c.begin(), c.end()); }
OpenCounts OpenBranches(const Schema& s) {
  OpenCounts c{};
  if (s.IsUnion()) {
    for (const Schema& b : s.any_of) {
      const OpenCounts sub = OpenBranches(b);
      for (size_t i = 0; i < c.size(); ++i) c[i] += sub[i];
    }
  } else {
    switch (s.type) {
      case SchemaType::kString: c[0] = 1; break;
      case SchemaType::kInteger:
      case SchemaType::kNumber: c[1] = 1; break;
      case SchemaType::kBoolean: c[2] = 1; break;
      case SchemaType::kArray: c[4] = s.items ? Widest(OpenBranches(*s.items)) : 1; break;
      case SchemaType::kObject:
        c[5] = 1;
        for (const auto& p : s.properties) c[5] = std::max(c[5], Widest(OpenBranches(p.schema)));
        break;
    }
  }
  if (s.nullable) c[3] = std::max(c[3], 1);
  return c;
}

// Adds a branch to union `u`, flattening a union branch; null moves to the union.
void AddBranch(Schema branch, Schema* u) {
  u->nullable = u->nullable || branch.nullable;
  if (branch.IsUnion()) {
    for (Schema& b : branch.any_of) u->any_of.push_back(std::move(b));
    return;
  }
  branch.nullable = false;
  u->any_of.push_back(std::move(branch));
}

// A union of one branch is that branch; a wider one must fit the matcher (kMaxOpenBranches).
Result<Schema> FinishUnion(Schema u, const std::string& field) {
  if (u.any_of.empty()) return Unsupported(field + ": a value that can only be null is not supported");
  if (u.any_of.size() == 1) {
    Schema only = std::move(u.any_of[0]);
    only.nullable = only.nullable || u.nullable;
    if (only.description.empty()) only.description = u.description;
    return only;
  }
  u.type = u.any_of[0].type;
  const int open = Widest(OpenBranches(u));
  if (open > kMaxOpenBranches)
    return Unsupported(field + ": " + std::to_string(open) + " branches whose values start alike could be open at once while decoding, at most " +
                       std::to_string(kMaxOpenBranches) + " are supported (see docs/tool-schemas.md)");
  return u;
}

// anyOf: a union of its branches ({"type":"null"} makes it nullable); beside it only a description
// and annotations (a keyword beside it would apply to every branch: write it into each).
Result<Schema> ParseAnyOf(const OrderedJson& json, const OrderedJson& any_of, const std::string& path, int depth, size_t* nodes) {
  const std::string field = FieldPath(path, "anyOf");
  for (const auto& [key, value] : json.items()) {
    if (key != "anyOf" && key != "description" && !IsAnnotation(key))
      return Unsupported(FieldPath(path, key) + ": keywords beside anyOf are not supported (only a description); write it into each branch");
  }
  if (!any_of.is_array() || any_of.empty()) return InvalidArgument(field + ": must be a non-empty array");
  Schema u;
  u.union_keyword = "anyOf";
  for (size_t i = 0; i < any_of.size(); ++i) {
    if (IsNullSchema(any_of[i])) {
      u.nullable = true;
      continue;
    }
    FGEMMA_TRY(Schema branch, Parse(any_of[i], FieldPath(field, i), depth + 1, nodes));
    AddBranch(std::move(branch), &u);
  }
  if (auto it = json.find("description"); it != json.end() && it->is_string()) u.description = it->get<std::string>();
  return FinishUnion(std::move(u), field);
}

bool KeywordApplies(std::string_view owner, SchemaType type) {
  if (owner.empty()) return true;
  if (owner == "number") return type == SchemaType::kInteger || type == SchemaType::kNumber;
  return owner == SchemaTypeName(type);
}

// A type list of several types: one branch per type, each with the keywords of its type and the
// enum values of its type; a keyword no listed type has is refused.
Result<Schema> ParseTypeList(const OrderedJson& json, const std::string& path, int depth, size_t* nodes,
                             const std::vector<SchemaType>& types, bool nullable) {
  for (const auto& [key, value] : json.items()) {
    if (IsAnnotation(key)) continue;
    const std::string_view owner = KeywordType(key);
    if (owner == "?")
      return Unsupported(FieldPath(path, key) + ": keyword '" + key + "' is not supported (the keywords a tool may use are listed in docs/tool-schemas.md)");
    if (std::none_of(types.begin(), types.end(), [&](SchemaType t) { return KeywordApplies(owner, t); }))
      return InvalidArgument(FieldPath(path, key) + ": no type in the type list has " + key);
  }
  if (auto it = json.find("nullable"); it != json.end()) {
    if (!it->is_boolean()) return InvalidArgument(path + ".nullable: must be a boolean, got " + JsonKindName(*it));
    nullable = nullable || it->get<bool>();
  }
  const char* enum_key = json.contains("const") ? "const" : json.contains("enum") ? "enum" : nullptr;
  if (enum_key != nullptr && json.contains("const") && json.contains("enum"))
    return Unsupported(path + ".const: const beside enum is not supported; use one");
  std::vector<bool> placed;
  if (enum_key != nullptr && std::string_view(enum_key) == "enum") {
    if (!json["enum"].is_array() || json["enum"].empty()) return InvalidArgument(path + ".enum: must be a non-empty array");
    placed.assign(json["enum"].size(), false);
  }
  Schema u;
  u.union_keyword = "type";
  u.nullable = nullable;
  for (SchemaType t : types) {
    OrderedJson b = OrderedJson::object();
    for (const auto& [key, value] : json.items()) {
      if (key == "nullable" || key == "const" || key == "enum" || !KeywordApplies(KeywordType(key), t)) continue;
      b[key] = value;
    }
    b["type"] = SchemaTypeName(t);
    if (enum_key != nullptr && std::string_view(enum_key) == "const") {
      if (!MatchesScalarType(t, Json(json["const"]))) continue;
      b["const"] = json["const"];
    } else if (enum_key != nullptr) {
      OrderedJson values = OrderedJson::array();
      const auto& all = json["enum"];
      for (size_t i = 0; i < all.size(); ++i) {
        if (all[i].is_null() && nullable) placed[i] = true;
        if (!MatchesScalarType(t, Json(all[i]))) continue;
        values.push_back(all[i]);
        placed[i] = true;
      }
      if (values.empty()) continue;
      b["enum"] = std::move(values);
    }
    FGEMMA_TRY(Schema branch, Parse(b, path, depth + 1, nodes));
    AddBranch(std::move(branch), &u);
  }
  for (size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i]) return InvalidArgument(FieldPath(path + ".enum", i) + ": " + JsonText(Json(json["enum"][i])) + " is of no type in the type list");
  }
  if (enum_key != nullptr && std::string_view(enum_key) == "const" && u.any_of.empty())
    return InvalidArgument(path + ".const: of no type in the type list");
  if (auto it = json.find("description"); it != json.end() && it->is_string()) u.description = it->get<std::string>();
  return FinishUnion(std::move(u), path + ".type");
}

Result<Schema> Parse(const OrderedJson& json, const std::string& path, int depth, size_t* nodes) {
  if (depth > kMaxDepth) return InvalidArgument(path + ": schema nested deeper than " + std::to_string(kMaxDepth) + " levels");
  FGEMMA_RETURN_IF_ERROR(CountNodes(1, path, nodes));
  if (!json.is_object()) return InvalidArgument(path + ": must be an object, got " + JsonKindName(json));
  if (auto it = json.find("anyOf"); it != json.end()) return ParseAnyOf(json, *it, path, depth, nodes);
  for (const char* key : {"oneOf", "allOf", "not", "$ref"}) {
    if (json.contains(key)) return Unsupported(FieldPath(path, key) + ": schema composition is not supported");
  }
  Schema s;
  bool listed_null = false;
  FGEMMA_TRY(std::vector<SchemaType> types, ParseTypes(json, path, &listed_null));
  if (types.size() > 1) return ParseTypeList(json, path, depth, nodes, types, listed_null);
  s.type = types[0];
  FGEMMA_RETURN_IF_ERROR(CheckKeywords(json, path, s.type));
  if (auto it = json.find("description"); it != json.end()) {
    if (!it->is_string()) return InvalidArgument(path + ".description: must be a string, got " + JsonKindName(*it));
    s.description = it->get<std::string>();
  }
  if (auto it = json.find("nullable"); it != json.end()) {
    if (!it->is_boolean()) return InvalidArgument(path + ".nullable: must be a boolean, got " + JsonKindName(*it));
    s.nullable = it->get<bool>();
  }
  s.nullable = s.nullable || listed_null;
  FGEMMA_RETURN_IF_ERROR(ParseEnum(json, path, nodes, &s));
  if (s.type == SchemaType::kInteger || s.type == SchemaType::kNumber) FGEMMA_RETURN_IF_ERROR(ParseNumberKeywords(json, path, &s));
  if (s.type == SchemaType::kString) FGEMMA_RETURN_IF_ERROR(ParseStringKeywords(json, path, &s));
  FGEMMA_RETURN_IF_ERROR(ParseFormat(json, path, &s));
  if (s.type == SchemaType::kArray) {
    if (auto it = json.find("items"); it != json.end()) {
      FGEMMA_TRY(Schema items, Parse(*it, path + ".items", depth + 1, nodes));
      s.items = std::make_shared<const Schema>(std::move(items));
    }
    if (json.contains("minItems")) {
      FGEMMA_TRY(s.min_items, Count(json, "minItems", path));
    }
    if (json.contains("maxItems")) {
      FGEMMA_TRY(s.max_items, Count(json, "maxItems", path));
    }
    if (s.max_items && *s.max_items < s.min_items) return InvalidArgument(FieldPath(path, "maxItems") + ": below minItems");
    if (auto it = json.find("uniqueItems"); it != json.end()) {
      if (!it->is_boolean()) return InvalidArgument(FieldPath(path, "uniqueItems") + ": must be a boolean");
      if (it->get<bool>()) return Unsupported(FieldPath(path, "uniqueItems") + ": uniqueItems true is not supported");
    }
  }
  if (s.type == SchemaType::kObject) FGEMMA_RETURN_IF_ERROR(ParseObjectMembers(json, path, depth, nodes, &s));
  // An enum (or const) value the other keywords refuse could never be valid: say so now.
  for (size_t i = 0; i < s.enum_values.size(); ++i) {
    Schema plain = s;
    plain.enum_values.clear();
    const auto errors = Violations(plain, s.enum_values[i], json.contains("const") ? path + ".const" : FieldPath(path + ".enum", i));
    if (!errors.empty()) return InvalidArgument(errors[0] + " (an enum value the schema's other keywords refuse)");
  }
  return s;
}

Status ParseObjectMembers(const OrderedJson& json, const std::string& path, int depth, size_t* nodes, Schema* s) {
  if (auto it = json.find("properties"); it != json.end()) {
    const std::string field = path + ".properties";
    if (!it->is_object()) return InvalidArgument(field + ": must be an object, got " + JsonKindName(*it));
    s->has_properties = true;
    for (const auto& [name, sub] : it->items()) {
      const std::string sub_path = FieldPath(field, name);
      if (IsTemplateReservedName(name)) {
        return InvalidArgument(sub_path + ": a parameter named '" + name +
                               "' is dropped from the prompt by the FunctionGemma template; rename it");
      }
      if (!IsPlainName(name)) {
        return InvalidArgument(sub_path + ": parameter name must be non-empty, without whitespace or any of :,{}[]<>");
      }
      FGEMMA_TRY(Schema parsed, Parse(sub, sub_path, depth + 1, nodes));
      s->properties.push_back({name, std::move(parsed)});
    }
  }
  if (auto it = json.find("required"); it != json.end()) {
    const std::string field = path + ".required";
    if (!it->is_array()) return InvalidArgument(field + ": must be an array of property names, got " + JsonKindName(*it));
    for (size_t i = 0; i < it->size(); ++i) {
      const auto& name = (*it)[i];
      if (!name.is_string()) return InvalidArgument(FieldPath(field, i) + ": must be a string, got " + JsonKindName(name));
      if (s->has_properties && s->FindProperty(name.get<std::string>()) == nullptr)
        return InvalidArgument(FieldPath(field, i) + ": '" + name.get<std::string>() + "' is not a declared property");
      s->required.push_back(name.get<std::string>());
    }
  }
  if (auto it = json.find("additionalProperties"); it != json.end()) {
    if (!it->is_boolean() && !it->is_object())
      return InvalidArgument(path + ".additionalProperties: must be a boolean or a schema, got " + JsonKindName(*it));
    s->additional_properties = !it->is_boolean() || it->get<bool>();
  }
  return Status::Ok();
}

std::string EnumList(const std::vector<Json>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(JsonText(values[i]));
  }
  out.push_back(']');
  return out;
}

void CheckNumber(const Schema& s, const Json& v, const std::string& path, std::vector<std::string>* errors) {
  const std::string text = DecimalText(v);
  if (s.minimum) {
    const int cmp = CompareDecimal(text, s.minimum->decimal);
    if (cmp < 0 || (cmp == 0 && s.minimum->exclusive))
      errors->push_back(path + ": " + text + " is below the " + (s.minimum->exclusive ? "exclusive " : "") + "minimum " + s.minimum->decimal);
  }
  if (s.maximum) {
    const int cmp = CompareDecimal(text, s.maximum->decimal);
    if (cmp > 0 || (cmp == 0 && s.maximum->exclusive))
      errors->push_back(path + ": " + text + " is above the " + (s.maximum->exclusive ? "exclusive " : "") + "maximum " + s.maximum->decimal);
  }
  if (!s.multiple_of.empty()) {
    bool exact = false;
    const SchemaUnits value = DecimalToUnits(text, Rounding::kFloor, &exact);
    const SchemaUnits step = DecimalToUnits(s.multiple_of, Rounding::kFloor);
    bool multiple = exact && value % step == 0;
    if (value == kUnitsClamp || value == -kUnitsClamp) {  // beyond exact units: as doubles
      const double q = v.get<double>() / std::stod(s.multiple_of);
      multiple = std::isfinite(q) && std::floor(q) == q;
    }
    if (!multiple) errors->push_back(path + ": " + text + " is not a multiple of " + s.multiple_of);
  }
}

void CheckString(const Schema& s, const std::string& text, const std::string& path, std::vector<std::string>* errors) {
  if (s.min_length > 0 || s.max_length) {
    const size_t chars = static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; }));
    if (chars < s.min_length)
      errors->push_back(path + ": " + std::to_string(chars) + " characters, fewer than minLength " + std::to_string(s.min_length));
    if (s.max_length && chars > *s.max_length)
      errors->push_back(path + ": " + std::to_string(chars) + " characters, more than maxLength " + std::to_string(*s.max_length));
  }
  if (s.pattern && !s.pattern->Matches(text)) errors->push_back(path + ": " + JsonText(Json(text)) + " does not match its " + s.pattern_keyword);
}

void Validate(const Schema& s, const Json& v, const std::string& path, int depth, std::vector<std::string>* errors);

// Valid iff some branch admits the value. Otherwise: a type no branch has is named as such; when
// one branch has the value's type its messages are the reason; else each branch's first message.
void ValidateUnion(const Schema& s, const Json& v, const std::string& path, int depth, std::vector<std::string>* errors) {
  std::vector<std::vector<std::string>> reasons;
  std::string types;
  const Schema* typed = nullptr;
  size_t typed_count = 0;
  for (const Schema& b : s.any_of) {
    std::vector<std::string> e;
    Validate(b, v, path, depth, &e);
    if (e.empty()) return;
    if (MatchesScalarType(b.type, v)) {
      typed = &b;
      ++typed_count;
    }
    if (types.find(SchemaTypeName(b.type)) == std::string::npos) types += std::string(types.empty() ? "" : " or ") + SchemaTypeName(b.type);
    reasons.push_back(std::move(e));
  }
  if (typed_count == 0) {
    errors->push_back(path + ": expected " + types + (s.nullable ? " or null" : "") + ", got " + JsonKindName(v));
    return;
  }
  if (typed_count == 1) {
    Validate(*typed, v, path, depth, errors);
    return;
  }
  std::string all = path + ": " + JsonText(v) + " matches no branch of its " + s.union_keyword + " (";
  for (size_t i = 0; i < reasons.size(); ++i) all += (i ? "; " : "") + reasons[i][0];
  errors->push_back(all + ")");
}

void Validate(const Schema& s, const Json& v, const std::string& path, int depth, std::vector<std::string>* errors) {
  if (depth > kMaxDepth) {
    errors->push_back(path + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return;
  }
  if (v.is_null() && s.nullable) return;
  if (s.IsUnion()) {
    ValidateUnion(s, v, path, depth, errors);
    return;
  }
  if (!MatchesScalarType(s.type, v)) {
    errors->push_back(path + ": expected " + SchemaTypeName(s.type) + ", got " + JsonKindName(v));
    return;
  }
  if (!s.enum_values.empty()) {
    bool found = false;
    for (const auto& e : s.enum_values) found = found || e == v;
    if (!found) errors->push_back(path + ": " + JsonText(v) + " is not one of " + EnumList(s.enum_values));
  }
  if (s.type == SchemaType::kInteger || s.type == SchemaType::kNumber) CheckNumber(s, v, path, errors);
  if (s.type == SchemaType::kString) CheckString(s, v.get_ref<const std::string&>(), path, errors);
  if (s.type == SchemaType::kArray) {
    if (v.size() < s.min_items) errors->push_back(path + ": " + std::to_string(v.size()) + " items, fewer than minItems " + std::to_string(s.min_items));
    if (s.max_items && v.size() > *s.max_items)
      errors->push_back(path + ": " + std::to_string(v.size()) + " items, more than maxItems " + std::to_string(*s.max_items));
  }
  if (s.type == SchemaType::kArray && s.items) {
    for (size_t i = 0; i < v.size(); ++i) Validate(*s.items, v[i], FieldPath(path, i), depth + 1, errors);
  }
  if (s.type == SchemaType::kObject) {
    for (const auto& name : s.required) {
      if (!v.contains(name)) errors->push_back(path + ": missing required parameter '" + name + "'");
    }
    for (const auto& [key, member] : v.items()) {
      if (const Schema* sub = s.FindProperty(key)) {
        Validate(*sub, member, FieldPath(path, key), depth + 1, errors);
      } else if (s.has_properties && !s.additional_properties) {
        errors->push_back(FieldPath(path, key) + ": unknown parameter");
      }
    }
  }
}

std::vector<std::string> Violations(const Schema& s, const Json& v, const std::string& path) {
  std::vector<std::string> errors;
  Validate(s, v, path, 0, &errors);
  return errors;
}

}  // namespace

const char* SchemaTypeName(SchemaType type) {
  switch (type) {
    case SchemaType::kString: return "string";
    case SchemaType::kInteger: return "integer";
    case SchemaType::kNumber: return "number";
    case SchemaType::kBoolean: return "boolean";
    case SchemaType::kArray: return "array";
    case SchemaType::kObject: return "object";
  }
  return "?";
}

bool IsTemplateReservedName(std::string_view name) {
  return name == "description" || name == "type" || name == "properties" || name == "required" || name == "nullable";
}

bool Schema::Admits(SchemaType t) const {
  if (!IsUnion()) return type == t;
  return std::any_of(any_of.begin(), any_of.end(), [t](const Schema& b) { return b.type == t; });
}

const Schema* Schema::BranchOf(SchemaType t) const {
  if (!IsUnion()) return type == t ? this : nullptr;
  const Schema* found = nullptr;
  for (const Schema& b : any_of) {
    if (b.type != t) continue;
    if (found != nullptr) return nullptr;
    found = &b;
  }
  return found;
}

const Schema* Schema::FindProperty(std::string_view name) const {
  for (const auto& p : properties) {
    if (p.name == name) return &p.schema;
  }
  return nullptr;
}

Result<Schema> ParseSchema(const OrderedJson& json, const std::string& path) {
  size_t nodes = 0;
  return Parse(json, path, 0, &nodes);
}

std::vector<std::string> ValidateArguments(const Schema& schema, const Json& value, const std::string& path) {
  std::vector<std::string> errors;
  Validate(schema, value, path, 0, &errors);
  return errors;
}

}  // namespace fgemma
