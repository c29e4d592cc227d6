#include "chat/schema.h"

#include <cmath>

#include "chat/call_format.h"

namespace fgemma {
namespace {

constexpr int kMaxDepth = kMaxSchemaDepth;

Result<SchemaType> ParseType(const OrderedJson& json, const std::string& path) {
  const auto it = json.find("type");
  if (it == json.end()) return InvalidArgument(path + ".type: missing");
  if (!it->is_string()) {
    return InvalidArgument(path + ".type: must be a string, got " + JsonKindName(*it) +
                           (it->is_array() ? " (type unions are not supported)" : ""));
  }
  std::string lower = it->get<std::string>();
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (lower == "string") return SchemaType::kString;
  if (lower == "integer") return SchemaType::kInteger;
  if (lower == "number") return SchemaType::kNumber;
  if (lower == "boolean") return SchemaType::kBoolean;
  if (lower == "array") return SchemaType::kArray;
  if (lower == "object") return SchemaType::kObject;
  return InvalidArgument(path + ".type: unsupported type '" + it->get<std::string>() + "'");
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

Status ParseEnum(const OrderedJson& json, const std::string& path, size_t* nodes, Schema* s) {
  const auto it = json.find("enum");
  if (it == json.end()) return Status::Ok();
  const std::string field = path + ".enum";
  if (s->type == SchemaType::kArray || s->type == SchemaType::kObject)
    return InvalidArgument(field + ": enum is only supported for string, integer, number and boolean");
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

Result<Schema> Parse(const OrderedJson& json, const std::string& path, int depth, size_t* nodes) {
  if (depth > kMaxDepth) return InvalidArgument(path + ": schema nested deeper than " + std::to_string(kMaxDepth) + " levels");
  FGEMMA_RETURN_IF_ERROR(CountNodes(1, path, nodes));
  if (!json.is_object()) return InvalidArgument(path + ": must be an object, got " + JsonKindName(json));
  for (const char* key : {"anyOf", "oneOf", "allOf", "not", "$ref"}) {
    if (json.contains(key)) return Unsupported(FieldPath(path, key) + ": schema composition is not supported");
  }
  Schema s;
  FGEMMA_TRY(s.type, ParseType(json, path));
  if (auto it = json.find("description"); it != json.end()) {
    if (!it->is_string()) return InvalidArgument(path + ".description: must be a string, got " + JsonKindName(*it));
    s.description = it->get<std::string>();
  }
  if (auto it = json.find("nullable"); it != json.end()) {
    if (!it->is_boolean()) return InvalidArgument(path + ".nullable: must be a boolean, got " + JsonKindName(*it));
    s.nullable = it->get<bool>();
  }
  FGEMMA_RETURN_IF_ERROR(ParseEnum(json, path, nodes, &s));
  if (s.type == SchemaType::kArray) {
    if (auto it = json.find("items"); it != json.end()) {
      FGEMMA_TRY(Schema items, Parse(*it, path + ".items", depth + 1, nodes));
      s.items = std::make_shared<const Schema>(std::move(items));
    }
  } else if (json.contains("items")) {
    return InvalidArgument(path + ".items: only arrays have items (type is " + SchemaTypeName(s.type) + ")");
  }
  if (s.type == SchemaType::kObject) {
    FGEMMA_RETURN_IF_ERROR(ParseObjectMembers(json, path, depth, nodes, &s));
  } else {
    for (const char* key : {"properties", "required"}) {
      if (json.contains(key))
        return InvalidArgument(FieldPath(path, key) + ": only objects have " + key + " (type is " + SchemaTypeName(s.type) + ")");
    }
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

void Validate(const Schema& s, const Json& v, const std::string& path, int depth, std::vector<std::string>* errors) {
  if (depth > kMaxDepth) {
    errors->push_back(path + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return;
  }
  if (v.is_null() && s.nullable) return;
  if (!MatchesScalarType(s.type, v)) {
    errors->push_back(path + ": expected " + SchemaTypeName(s.type) + ", got " + JsonKindName(v));
    return;
  }
  if (!s.enum_values.empty()) {
    bool found = false;
    for (const auto& e : s.enum_values) found = found || e == v;
    if (!found) errors->push_back(path + ": " + JsonText(v) + " is not one of " + EnumList(s.enum_values));
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
