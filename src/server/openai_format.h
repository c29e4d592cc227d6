// OpenAI chat-completions JSON shapes built from a CallOutcome: the response object, the SSE chunks
// of a streamed response (their deltas come from server/chat_stream.h), /v1/models, and error bodies.
#pragma once

#include <string>
#include <vector>

#include "runtime/function_caller.h"
#include "util/json.h"

namespace fgemma::server {

struct ResponseMeta {
  std::string id;       // "chatcmpl-N"
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// JSON text that never throws: bytes that are not UTF-8 become U+FFFD (the grammar keeps model
// output valid UTF-8; this only guards the server against a bug turning into an exception).
std::string DumpJson(const Json& j);

Json ErrorBody(const std::string& message, const std::string& type);
// The /v1/models list: one entry per served model id, in order.
Json ModelsBody(const std::vector<std::string>& models);
// One entry of message.tool_calls: {"id":"call_N_I","type":"function","function":{name, arguments}}
// (arguments as JSON text). A call that breaks its tool's schema (possible only where decoding was
// not constrained: tool_choice "none" text that spells a call, an unconstrained request) also
// carries "errors": the validator's messages, the same as the C API's calls[].errors and what
// `fgemma eval` counts as invalid (docs/tool-schemas.md).
Json ToolCallJson(const ResponseMeta& meta, size_t index, const std::string& name, const std::string& arguments,
                  const std::vector<std::string>& errors = {});
// choices[0].message has `tool_calls` (arguments as JSON text) and finish_reason "tool_calls", or
// `content` and "stop". The member "fgemma" carries CallOutcomeToJson (what `fgemma call` prints).
Json CompletionResponse(const ResponseMeta& meta, const CallOutcome& outcome);
// Generation hit the request's max_tokens: finish_reason "length", with `message` what was
// generated until then (ChatStream::PartialMessage: the calls completed, or the text).
Json LengthResponse(const ResponseMeta& meta, Json message, size_t completion_tokens);
// Streaming (chat.completion.chunk): the first chunk (role), one per delta, and the last one
// (empty delta, the response's finish_reason and usage).
Json RoleChunk(const ResponseMeta& meta);
Json DeltaChunk(const ResponseMeta& meta, Json delta);
Json FinalChunk(const ResponseMeta& meta, const Json& response);

}  // namespace fgemma::server
