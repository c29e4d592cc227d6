#include "chat/chat_json.h"

namespace fgemma {

Result<OrderedJson> ParseOrderedJson(std::string_view text, const std::string& what, int max_depth) {
  FGEMMA_RETURN_IF_ERROR(CheckJsonDepth(text, what, max_depth));
  OrderedJson j = OrderedJson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  // Malformed: the util parser words the error (with the byte offset) the way the rest of fgemma does.
  auto plain = ParseJson(text, what, max_depth);
  return plain.ok() ? InvalidArgument(what + ": malformed JSON") : plain.status();
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
std::string JsonText(const OrderedJson& value) { return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }
std::string JsonText(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }
const char* JsonKindName(const Json& value) { return KindName(value); }

std::string FieldPath(const std::string& base, std::string_view key) {
  std::string out = base;
  if (!out.empty()) out.push_back('.');
  out.append(key);
  return out;
}

std::string FieldPath(const std::string& base, size_t index) { return base + "[" + std::to_string(index) + "]"; }

}  // namespace fgemma
