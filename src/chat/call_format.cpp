#include "chat/call_format.h"

#include <cmath>

#include "chat/jinja_values.h"

namespace fgemma {
namespace {

constexpr int kMaxDepth = 64;

Status Append(const OrderedJson* value, bool escape_keys, int depth, PromptOut* out) {
  if (depth > kMaxDepth) return InvalidArgument("value nested deeper than " + std::to_string(kMaxDepth) + " levels");
  if (value == nullptr) return Status::Ok();
  if (value->is_string()) {
    out->control(kEscape).append(value->get_ref<const std::string&>()).control(kEscape);
  } else if (value->is_boolean()) {
    out->append(value->get<bool>() ? "true" : "false");
  } else if (value->is_object()) {
    out->push_back('{');
    FGEMMA_TRY(auto items, jinja::DictSort(value));
    bool first = true;
    for (const auto& [key, member] : items) {
      if (!first) out->push_back(',');
      first = false;
      if (escape_keys) {
        out->control(kEscape).append(key).control(kEscape);
      } else {
        out->append(key);
      }
      out->push_back(':');
      FGEMMA_RETURN_IF_ERROR(Append(member, escape_keys, depth + 1, out));
    }
    out->push_back('}');
  } else if (value->is_array()) {
    out->push_back('[');
    for (size_t i = 0; i < value->size(); ++i) {
      if (i > 0) out->push_back(',');
      FGEMMA_RETURN_IF_ERROR(Append(&(*value)[i], escape_keys, depth + 1, out));
    }
    out->push_back(']');
  } else {
    FGEMMA_TRY(std::string text, jinja::Str(value));
    out->append(text);
  }
  return Status::Ok();
}

// Checks that the model-side syntax of `value` parses back to `value`. It runs before the value is
// copied into an OrderedJson (a recursive copy), so it is also where the depth of a value built by
// the caller, not parsed with a limit, is refused: Append would refuse it anyway, after the copy.
Status CheckRepresentable(const Json& value, const std::string& path, int depth) {
  if (depth > kMaxDepth) return InvalidArgument(path + ": value nested deeper than " + std::to_string(kMaxDepth) + " levels");
  if (value.is_string()) {
    if (value.get_ref<const std::string&>().find(kEscape) != std::string::npos)
      return InvalidArgument(path + ": string contains \"<escape>\", which the call syntax cannot quote");
  } else if (value.is_number_float()) {
    if (!std::isfinite(value.get<double>())) return InvalidArgument(path + ": non-finite number");
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) FGEMMA_RETURN_IF_ERROR(CheckRepresentable(value[i], FieldPath(path, i), depth + 1));
  } else if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      if (!IsPlainName(key)) return InvalidArgument(FieldPath(path, key) + ": key cannot be written unquoted in a call");
      FGEMMA_RETURN_IF_ERROR(CheckRepresentable(member, FieldPath(path, key), depth + 1));
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsPlainName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
    switch (c) {
      case ':': case ',': case '{': case '}': case '[': case ']': case '<': case '>': return false;
      default: break;
    }
  }
  return true;
}

Status AppendFormattedArgument(const OrderedJson* value, bool escape_keys, PromptOut* out) {
  return Append(value, escape_keys, 0, out);
}

Result<std::string> FormatCallArguments(const Json& arguments) {
  if (!arguments.is_object()) return InvalidArgument(std::string("arguments: must be an object, got ") + JsonKindName(arguments));
  FGEMMA_RETURN_IF_ERROR(CheckRepresentable(arguments, "arguments", 0));
  const OrderedJson ordered(arguments);
  PromptOut out;
  FGEMMA_RETURN_IF_ERROR(Append(&ordered, /*escape_keys=*/false, 0, &out));
  return std::move(out.mutable_text());
}

Result<std::string> FormatCall(std::string_view name, const Json& arguments) {
  if (!IsPlainName(name)) return InvalidArgument("function name '" + std::string(name) + "' cannot be written in a call");
  FGEMMA_TRY(std::string args, FormatCallArguments(arguments));
  std::string out;
  out.append(kStartFunctionCall).append("call:").append(name).append(args).append(kEndFunctionCall);
  return out;
}

}  // namespace fgemma
