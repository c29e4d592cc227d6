#include "server/chat_stream.h"

#include <algorithm>
#include <string_view>

#include "chat/call_format.h"
#include "chat/parse_call.h"

namespace fgemma::server {
namespace {

// What ends the text part of a turn, as ParseModelOutput reads it.
constexpr std::string_view kMarkers[] = {kStartFunctionCall, kEndOfTurn, kStartFunctionResponse, "<eos>"};

}  // namespace

ChatStream::ChatStream(const Tokenizer& tokenizer, const std::vector<Tool>& tools, ResponseMeta meta)
    : decoder_(tokenizer), tools_(tools), meta_(std::move(meta)) {}

size_t ChatStream::ContentEnd(bool final) const {
  size_t end = text_.size();
  for (std::string_view m : kMarkers) end = std::min(end, text_.find(m));
  if (end < text_.size() || final) return end;
  // Each marker holds one '<', its first byte: only a tail from the last '<' can still become one.
  const size_t lt = text_.rfind('<');
  if (lt == std::string::npos) return end;
  const std::string_view tail = std::string_view(text_).substr(lt);
  for (std::string_view m : kMarkers) {
    if (tail.size() < m.size() && m.substr(0, tail.size()) == tail) return lt;
  }
  return end;
}

void ChatStream::AppendCallDeltas(size_t index, const std::string& name, const std::string& arguments,
                                  const std::vector<std::string>& errors, std::vector<Json>* deltas) {
  Json head = ToolCallJson(meta_, index, name, "", errors);  // a broken call says so in its first delta
  head["index"] = index;
  deltas->push_back({{"tool_calls", Json::array({std::move(head)})}});
  deltas->push_back({{"tool_calls", Json::array({{{"index", index}, {"function", {{"arguments", arguments}}}}})}});
}

Status ChatStream::Push(int32_t id, std::vector<Json>* deltas) {
  FGEMMA_TRY(std::string piece, decoder_.Push(id));
  ++tokens_;
  if (piece.empty()) return Status::Ok();
  text_ += piece;
  // content_ is always a prefix of text_: the text part streamed so far.
  const size_t end = ContentEnd(false);
  if (end > content_.size()) {
    std::string more = text_.substr(content_.size(), end - content_.size());
    content_ += more;
    deltas->push_back({{"content", std::move(more)}});
  }
  if (text_.size() >= kEndFunctionCall.size() &&
      std::string_view(text_).substr(text_.size() - kEndFunctionCall.size()) == kEndFunctionCall) {
    // A call may have just closed (or the marker was spelled inside a string value, in which case
    // the parse completes nothing new). Parsing the output so far gives each completed call exactly
    // as the final parse of the whole output will.
    const ParsedOutput parsed = ParseModelOutput(text_, tools_);
    for (size_t i = calls_sent_; i < parsed.calls.size(); ++i)
      AppendCallDeltas(i, parsed.calls[i].name, DumpJson(parsed.calls[i].arguments), parsed.calls[i].errors, deltas);
    calls_sent_ = std::max(calls_sent_, parsed.calls.size());
  }
  return Status::Ok();
}

std::vector<Json> ChatStream::Complete(const Json& message) {
  std::vector<Json> deltas;
  if (message.contains("content") && message["content"].is_string()) {
    const std::string& content = message["content"].get_ref<const std::string&>();
    // Streamed content is always a prefix of the output, hence of the final content; anything else
    // would be a bug the streaming tests catch (the deltas would then not add up).
    if (content.size() > content_.size() && content.compare(0, content_.size(), content_) == 0) {
      deltas.push_back({{"content", content.substr(content_.size())}});
      content_ = content;
    }
  }
  if (message.contains("tool_calls")) {
    const Json& calls = message["tool_calls"];
    for (size_t i = calls_sent_; i < calls.size(); ++i)
      AppendCallDeltas(i, calls[i]["function"]["name"].get<std::string>(), calls[i]["function"]["arguments"].get<std::string>(),
                       calls[i].value("errors", std::vector<std::string>{}), &deltas);
    calls_sent_ = std::max(calls_sent_, calls.size());
  }
  return deltas;
}

Json ChatStream::PartialMessage() const {
  Json message = {{"role", "assistant"}, {"content", nullptr}};
  const ParsedOutput parsed = ParseModelOutput(text_, tools_);
  if (!parsed.calls.empty()) {
    Json calls = Json::array();
    for (size_t i = 0; i < parsed.calls.size(); ++i)
      calls.push_back(ToolCallJson(meta_, i, parsed.calls[i].name, DumpJson(parsed.calls[i].arguments), parsed.calls[i].errors));
    message["tool_calls"] = std::move(calls);
    return message;
  }
  const size_t end = ContentEnd(true);
  if (end > 0) message["content"] = text_.substr(0, end);
  return message;
}

}  // namespace fgemma::server
