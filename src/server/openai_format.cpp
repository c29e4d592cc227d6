#include "server/openai_format.h"

namespace fgemma::server {
namespace {

Json Envelope(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

Json Chunk(const ResponseMeta& meta, Json delta, Json finish_reason) {
  Json j = Envelope(meta, "chat.completion.chunk");
  j["choices"] = Json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish_reason)}}});
  return j;
}

}  // namespace

std::string DumpJson(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json ErrorBody(const std::string& message, const std::string& type) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

Json ModelsBody(const std::vector<std::string>& models) {
  Json data = Json::array();
  for (const std::string& id : models) data.push_back({{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "fgemma"}});
  return {{"object", "list"}, {"data", std::move(data)}};
}

Json ToolCallJson(const ResponseMeta& meta, size_t index, const std::string& name, const std::string& arguments,
                  const std::vector<std::string>& errors) {
  Json call = {{"id", "call_" + meta.id.substr(meta.id.find('-') + 1) + "_" + std::to_string(index)},
               {"type", "function"},
               {"function", {{"name", name}, {"arguments", arguments}}}};
  if (!errors.empty()) call["errors"] = errors;
  return call;
}

Json CompletionResponse(const ResponseMeta& meta, const CallOutcome& outcome) {
  Json message = {{"role", "assistant"}};
  Json tool_calls = Json::array();
  for (size_t i = 0; i < outcome.parsed.calls.size(); ++i) {
    const auto& c = outcome.parsed.calls[i];
    tool_calls.push_back(ToolCallJson(meta, i, c.name, DumpJson(c.arguments), c.errors));
  }
  const bool calls = !tool_calls.empty();
  // An output that failed to parse is returned as its raw text rather than dropped.
  const std::string& text = outcome.parsed.ok() ? outcome.parsed.text : outcome.parsed.raw;
  message["content"] = calls || text.empty() ? Json(nullptr) : Json(text);
  if (calls) message["tool_calls"] = std::move(tool_calls);
  const size_t prompt = outcome.timing.prefix_tokens + outcome.timing.prompt_tokens;
  Json j = Envelope(meta, "chat.completion");
  j["choices"] = Json::array({{{"index", 0}, {"message", std::move(message)}, {"finish_reason", calls ? "tool_calls" : "stop"}}});
  j["usage"] = {{"prompt_tokens", prompt},
                {"completion_tokens", outcome.timing.generated_tokens},
                {"total_tokens", prompt + outcome.timing.generated_tokens}};
  j["fgemma"] = CallOutcomeToJson(outcome);
  return j;
}

Json LengthResponse(const ResponseMeta& meta, Json message, size_t completion_tokens) {
  Json j = Envelope(meta, "chat.completion");
  j["choices"] = Json::array({{{"index", 0}, {"message", std::move(message)}, {"finish_reason", "length"}}});
  j["usage"] = {{"completion_tokens", completion_tokens}};
  return j;
}

Json RoleChunk(const ResponseMeta& meta) { return Chunk(meta, {{"role", "assistant"}, {"content", nullptr}}, nullptr); }

Json DeltaChunk(const ResponseMeta& meta, Json delta) { return Chunk(meta, std::move(delta), nullptr); }

Json FinalChunk(const ResponseMeta& meta, const Json& response) {
  Json last = Chunk(meta, Json::object(), response["choices"][0]["finish_reason"]);
  if (response.contains("usage")) last["usage"] = response["usage"];
  return last;
}

}  // namespace fgemma::server
