#include "call_common.h"

#include "chat/chat_json.h"
#include "util/mapped_file.h"

namespace fgemma::cli {

Result<ChatRequest> BuildCallRequest(const CallInputs& in) {
  FGEMMA_TRY(std::string text, ReadFileToString(in.tools_path));
  FGEMMA_TRY(OrderedJson tools, ParseOrderedJson(text, in.tools_path));
  if (tools.is_object() && tools.contains("tools")) tools = tools["tools"];
  if (!tools.is_array()) return InvalidArgument(in.tools_path + ": expected a JSON array of tools (or {\"tools\": [...]})");
  OrderedJson body;
  body["tools"] = tools;
  body["messages"] = OrderedJson::array(
      {{{"role", "developer"}, {"content", in.system.empty() ? std::string(kDefaultDeveloperPreamble) : in.system}},
       {{"role", "user"}, {"content", in.utterance}}});
  auto request = ParseChatRequest(body);
  if (!request.ok()) return request.status().WithContext(in.tools_path);
  return request;
}

Result<ToolChoice> ParseToolChoiceArg(const std::string& arg, const std::vector<Tool>& tools) {
  return ParseToolChoice(Json(arg), tools);
}

}  // namespace fgemma::cli
