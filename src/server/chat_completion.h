// One POST /v1/chat/completions, after the server has picked the model and leased a session: the
// body's fields read into a CallRequest, the call run on the leased FunctionCaller (its tokens fed
// to a ChatStream), and the answer sent whole or as server-sent events. server.cpp keeps what
// depends on the server's state (admission, the served models, the session pool).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/function_caller.h"
#include "server/http_loop.h"
#include "server/openai_format.h"
#include "util/json.h"

namespace fgemma::server {

// The request's call and how to answer it; errors are the client's (400), with the message to send.
struct ChatCall {
  CallRequest call;
  bool stream = false;
};
// `body` is the request's JSON object (its `model` already resolved by the caller). max_tokens: the
// server's cap (a request's max_tokens / max_completion_tokens may only lower it); deadline: the
// request's, or none when timeout_s <= 0, counted from `arrival`.
Result<ChatCall> ParseChatCall(const OrderedJson& body, size_t max_tokens, double timeout_s,
                               std::chrono::steady_clock::time_point arrival);

// How a call ended, as the answer to send.
struct ChatRun {
  int status = 200;
  Json response;           // the completion, or an error body
  std::vector<Json> rest;  // deltas the stream still lacks to equal the response's message
  bool emit_failed = false;  // `emit` returned false: the client is gone, nothing to send
};
// Receives the deltas of each generated token (maybe none); returning false stops the call.
using EmitDeltas = std::function<bool(const std::vector<Json>&)>;

// Runs `call` on `caller`. A call stopped by max_tokens (FinishReason::kLength) or by its deadline
// (kDeadline) answers finish_reason "length" / "deadline" with what was generated so far.
ChatRun RunChatCall(FunctionCaller& caller, CallRequest& call, const ResponseMeta& meta, const EmitDeltas& emit);

using Header = std::pair<std::string, std::string>;

// Sends the answer as one JSON response.
void SendChatRun(const ChatRun& run, const Header& session_header, http::ResponseWriter& out);

// Runs the call on its own thread and streams its deltas as server-sent events. Anything that
// fails before the first token (the prompt too long for the context, a tool_choice the catalog
// cannot meet, ...) is answered with its status and a JSON error instead of a 200 followed by an
// error event. `call_ended` runs as soon as the call is over, before the answer's last bytes.
// Returns false when a write failed (the client is gone; the call was cancelled).
bool StreamChatCall(FunctionCaller& caller, CallRequest& call, const ResponseMeta& meta, const Header& session_header,
                    http::ResponseWriter& out, const std::function<void()>& call_ended);

}  // namespace fgemma::server
