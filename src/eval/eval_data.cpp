#include "eval/eval_data.h"

#include "chat/chat_json.h"
#include "util/mapped_file.h"

namespace fgemma {
namespace {

Status RowError(const std::string& where, const std::string& message) { return InvalidArgument(where + ": " + message); }

// The expected answer's calls, checked against the row's own tools: an expectation no model could
// meet is a mistake in the data, better reported than scored.
Result<std::vector<ExpectedCall>> ExpectedCalls(const ChatRequest& req, const std::string& path) {
  std::vector<ExpectedCall> out;
  const Message& answer = req.messages.back();
  for (size_t c = 0; c < answer.tool_calls.size(); ++c) {
    const ToolCall& call = answer.tool_calls[c];
    const std::string field = FieldPath(path + ".tool_calls", c) + ".function";
    if (req.FindTool(call.name) == nullptr)
      return InvalidArgument(field + ".name: '" + call.name + "' is not declared in the row's tools");
    if (!call.arguments.is_object())
      return InvalidArgument(field + ".arguments: must be a JSON object (or its JSON text), got " + JsonKindName(call.arguments));
    // Re-read as unordered JSON: expected and generated arguments are compared as values, whatever
    // their key order.
    FGEMMA_TRY(Json args, ParseJson(call.arguments.dump(), field + ".arguments"));
    out.push_back({call.name, std::move(args)});
  }
  return out;
}

}  // namespace

Result<EvalRow> ParseEvalRow(std::string_view line, size_t line_number, const std::string& where) {
  FGEMMA_TRY(OrderedJson row, ParseOrderedJson(line, where));
  if (!row.is_object()) return RowError(where, std::string("expected a JSON object, got ") + JsonKindName(row));
  EvalRow out;
  out.line = line_number;
  const auto meta = row.find("metadata");
  if (meta == row.end()) return RowError(where, "metadata: missing (\"train\" or \"eval\")");
  if (!meta->is_string() || (*meta != "train" && *meta != "eval"))
    return RowError(where, "metadata: expected \"train\" or \"eval\", got " + JsonText(*meta));
  out.split = meta->get<std::string>();
  const auto tools = row.find("tools");
  if (tools == row.end()) return RowError(where, "tools: missing");
  if (!tools->is_array()) return RowError(where, std::string("tools: must be an array of tools, got ") + JsonKindName(*tools));
  const auto messages = row.find("messages");
  if (messages == row.end()) return RowError(where, "messages: missing");
  if (!messages->is_array()) return RowError(where, std::string("messages: must be an array, got ") + JsonKindName(*messages));
  if (messages->size() < 2)
    return RowError(where, "messages: needs the prompt and the expected assistant turn, got " + std::to_string(messages->size()) +
                               " message(s)");
  const size_t last = messages->size() - 1;
  const std::string answer_path = FieldPath("messages", last);
  const OrderedJson& answer = messages->back();
  if (!answer.is_object() || !answer.contains("role") || answer["role"] != "assistant")
    return RowError(where, answer_path + ": the last message must be the expected assistant turn, got " +
                               (answer.is_object() && answer.contains("role") ? "role " + JsonText(answer["role"]) : JsonText(answer)));
  OrderedJson body;
  body["tools"] = *tools;
  body["messages"] = *messages;
  // The chat-completions conventions: call arguments arrive as JSON text.
  auto parsed = ParseChatRequest(body, RequestFormat::kOpenAI);
  if (!parsed.ok()) return parsed.status().WithContext(where);
  ChatRequest req = std::move(parsed).value();
  auto expected = ExpectedCalls(req, answer_path);
  if (!expected.ok()) return expected.status().WithContext(where);
  out.expected = std::move(expected).value();
  out.expected_text = req.messages.back().text;
  FGEMMA_TRY(Json tools_value, ParseJson(req.tools_json.dump(), where + ": tools"));
  out.tools_key = tools_value.dump();
  req.messages.pop_back();
  req.messages_json.erase(req.messages_json.size() - 1);
  out.prompt = std::move(req);
  return out;
}

Result<std::vector<EvalRow>> ParseEvalData(std::string_view text, const std::string& source, const EvalSelection& selection) {
  const std::string& split = selection.split;
  if (split != "train" && split != "eval" && split != "all")
    return InvalidArgument("unknown split '" + split + "': expected train, eval or all");
  std::vector<EvalRow> rows;
  size_t read = 0, line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    FGEMMA_TRY(EvalRow row, ParseEvalRow(line, line_number, source + ":" + std::to_string(line_number)));
    ++read;
    if (split != "all" && row.split != split) continue;
    if (selection.limit == 0 || rows.size() < selection.limit) rows.push_back(std::move(row));
  }
  if (read == 0) return InvalidArgument(source + ": no rows (an empty file?)");
  if (rows.empty()) return InvalidArgument(source + ": none of its " + std::to_string(read) + " rows has metadata \"" + split + "\"");
  return rows;
}

Result<std::vector<EvalRow>> ReadEvalData(const std::string& path, const EvalSelection& selection) {
  FGEMMA_TRY(std::string text, ReadFileToString(path));
  return ParseEvalData(text, path, selection);
}

}  // namespace fgemma
