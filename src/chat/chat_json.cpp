#include "chat/chat_json.h"

namespace fgemma {

Result<OrderedJson> ParseOrderedJson(std::string_view text, const std::string& what) {
  try {
    return OrderedJson::parse(text.begin(), text.end());
  } catch (const OrderedJson::parse_error& e) {
    return InvalidArgument(what + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(what + ": malformed JSON: " + e.what());
  }
}

namespace {
template <typename J>
const char* KindName(const J& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::null: return "null";
    default: return "binary";
  }
}
}  // namespace

const char* JsonKindName(const OrderedJson& value) { return KindName(value); }
const char* JsonKindName(const Json& value) { return KindName(value); }

std::string FieldPath(const std::string& base, std::string_view key) {
  std::string out = base;
  if (!out.empty()) out.push_back('.');
  out.append(key);
  return out;
}

std::string FieldPath(const std::string& base, size_t index) { return base + "[" + std::to_string(index) + "]"; }

}  // namespace fgemma
