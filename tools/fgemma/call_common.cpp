#include "call_common.h"

#include "chat/chat_json.h"
#include "util/mapped_file.h"

namespace fgemma::cli {

Result<CallRequest> BuildCallRequest(const CallInputs& in) {
  FGEMMA_TRY(std::string text, ReadFileToString(in.tools_path));
  FGEMMA_TRY(OrderedJson tools, ParseOrderedJson(text, in.tools_path));
  if (tools.is_object() && tools.contains("tools")) tools = tools["tools"];
  if (!tools.is_array()) return InvalidArgument(in.tools_path + ": expected a JSON array of tools (or {\"tools\": [...]})");
  OrderedJson body;
  body["tools"] = tools;
  body["messages"] = OrderedJson::array(
      {{{"role", "developer"}, {"content", in.system.empty() ? std::string(kDefaultDeveloperPreamble) : in.system}},
       {{"role", "user"}, {"content", in.utterance}}});
  auto chat = ParseChatRequest(body);
  if (!chat.ok()) return chat.status().WithContext(in.tools_path);
  FGEMMA_TRY(ToolChoice choice, ParseToolChoice(Json(in.tool_choice), chat->tools));
  return CallRequest{.chat = std::move(chat).value(), .tool_choice = std::move(choice)};
}

}  // namespace fgemma::cli
