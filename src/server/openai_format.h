// OpenAI chat-completions JSON shapes built from a CallOutcome: the response object, the SSE chunks
// of a streamed response, /v1/models, and error bodies.
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

Json ErrorBody(const std::string& message, const std::string& type);
Json ModelsBody(const std::string& model);
// choices[0].message has `tool_calls` (arguments as JSON text) and finish_reason "tool_calls", or
// `content` and "stop". The member "fgemma" carries CallOutcomeToJson (what `fgemma call` prints).
Json CompletionResponse(const ResponseMeta& meta, const CallOutcome& outcome);
// Generation hit the request's max_tokens: no calls, finish_reason "length".
Json LengthResponse(const ResponseMeta& meta, size_t completion_tokens);
// Streaming: the first chunk (role), then the chunks of a finished response (content or one
// tool_calls delta per call, then the finish_reason).
Json RoleChunk(const ResponseMeta& meta);
std::vector<Json> CompletionChunks(const ResponseMeta& meta, const Json& response);

}  // namespace fgemma::server
