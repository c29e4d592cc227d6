#include "server/chat_completion.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "chat/call_grammar.h"
#include "chat/request.h"
#include "server/chat_stream.h"

namespace fgemma::server {
namespace {

int HttpStatusFor(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kNotFound:
    case ErrorCode::kUnsupported:
      return 400;
    default:
      return 500;
  }
}

// The streamed call's thread and what it hands to the writing thread.
struct StreamJob {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Json> deltas;  // generated, not yet sent
  bool started = false;     // the first token was generated
  bool finished = false;
  std::atomic<bool> cancel{false};
  std::thread thread;
  ~StreamJob() {
    cancel = true;
    if (thread.joinable()) thread.join();
  }
};

}  // namespace

Result<ChatCall> ParseChatCall(const OrderedJson& b, size_t max_tokens, double timeout_s,
                               std::chrono::steady_clock::time_point arrival) {
  if (b.contains("stream") && !b["stream"].is_boolean() && !b["stream"].is_null())
    return InvalidArgument("stream: expected a boolean");
  // The request parser checks each field's type; should a library type error still escape it,
  // it is this request's error (400), not a fault of the server.
  Result<ChatRequest> request = InvalidArgument("unparsed");
  Result<ToolChoice> choice = InvalidArgument("unparsed");
  try {
    request = ParseChatRequest(b, RequestFormat::kOpenAI);
    if (request.ok()) choice = ToolChoiceOfBody(b, request->tools);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("invalid request: ") + e.what());
  }
  FGEMMA_RETURN_IF_ERROR(request.status());
  FGEMMA_RETURN_IF_ERROR(choice.status());
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!b.contains(key) || b[key].is_null()) continue;
    if (!b[key].is_number_unsigned() || b[key].get<size_t>() == 0)
      return InvalidArgument(std::string(key) + " must be a positive integer");
    max_tokens = std::min(max_tokens, b[key].get<size_t>());
  }
  ChatCall c{CallRequest{std::move(request).value(), std::move(choice).value(), {}, {}},
             b.contains("stream") && b["stream"].is_boolean() && b["stream"].get<bool>()};
  c.call.limits.max_tokens = max_tokens;
  if (timeout_s > 0)
    c.call.limits.deadline = arrival + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  return c;
}

ChatRun RunChatCall(FunctionCaller& caller, CallRequest& call, const ResponseMeta& meta, const EmitDeltas& emit) {
  ChatRun r;
  ChatStream stream(caller.tokenizer(), call.chat.tools, meta);
  Status stream_error;
  std::vector<Json> deltas;
  call.on_token = [&](int32_t id) {
    deltas.clear();
    if (Status st = stream.Push(id, &deltas); !st.ok()) {
      stream_error = st;
      return false;
    }
    if (emit && !emit(deltas)) {
      r.emit_failed = true;
      return false;
    }
    return true;
  };
  auto outcome = caller.Call(call);
  call.on_token = nullptr;  // it refers to this frame
  caller.TakeWarnings();
  if (r.emit_failed) return r;
  if (!stream_error.ok()) {
    r.status = 500;
    r.response = ErrorBody(stream_error.message(), "server_error");
    return r;
  }
  if (!outcome.ok()) {
    r.status = HttpStatusFor(outcome.status());
    r.response = ErrorBody(outcome.status().message(), r.status == 500 ? "server_error" : "invalid_request_error");
    return r;
  }
  if (outcome->finish_reason == FinishReason::kLength || outcome->finish_reason == FinishReason::kDeadline) {
    r.response = LengthResponse(meta, stream.PartialMessage(), outcome->timing.generated_tokens);
    if (outcome->finish_reason == FinishReason::kDeadline)
      r.response["choices"][0]["finish_reason"] = FinishReasonName(FinishReason::kDeadline);
  } else {
    r.response = CompletionResponse(meta, outcome.value());
  }
  r.rest = stream.Complete(r.response["choices"][0]["message"]);
  return r;
}

void SendChatRun(const ChatRun& run, const Header& session_header, http::ResponseWriter& out) {
  http::Response res;
  res.status = run.status;
  res.body = DumpJson(run.response);
  res.headers.push_back(session_header);
  out.Send(res);
}

bool StreamChatCall(FunctionCaller& caller, CallRequest& call, const ResponseMeta& meta, const Header& session_header,
                    http::ResponseWriter& out, const std::function<void()>& call_ended) {
  ChatRun result;  // before `job`, whose destructor joins the thread that writes it
  StreamJob job;
  call.limits.cancel = &job.cancel;
  job.thread = std::thread([&] {
    ChatRun r = RunChatCall(caller, call, meta, [&job](const std::vector<Json>& deltas) {
      std::lock_guard lock(job.mu);
      job.started = true;
      job.deltas.insert(job.deltas.end(), deltas.begin(), deltas.end());
      job.cv.notify_all();
      return !job.cancel.load();
    });
    std::lock_guard lock(job.mu);
    result = std::move(r);
    job.finished = true;
    job.cv.notify_all();
  });
  // 1. Nothing is sent before the first token: a call that fails first is answered as an error.
  {
    std::unique_lock lock(job.mu);
    job.cv.wait(lock, [&] { return job.started || job.finished; });
    if (!job.started && result.status != 200) {
      lock.unlock();
      job.thread.join();
      call_ended();
      SendChatRun(result, session_header, out);
      return true;
    }
  }
  // 2. The events: the role, then each token's deltas as they come. A failed write (the client is
  // gone) cancels the generation at its next token.
  const auto send = [&](const Json& j) { return out.WriteChunk("data: " + DumpJson(j) + "\n\n"); };
  const auto gone = [&] {
    job.cancel = true;
    return false;
  };
  if (!out.BeginStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, session_header}) ||
      !send(RoleChunk(meta)))
    return gone();
  {
    std::unique_lock lock(job.mu);
    while (true) {
      job.cv.wait(lock, [&] { return !job.deltas.empty() || job.finished; });
      while (!job.deltas.empty()) {
        Json d = std::move(job.deltas.front());
        job.deltas.pop_front();
        lock.unlock();
        const bool ok = send(DeltaChunk(meta, d));
        lock.lock();
        if (!ok) return gone();
      }
      if (job.finished) break;
    }
  }
  job.thread.join();
  call_ended();
  // 3. The end: what the response holds beyond the streamed deltas, the last chunk, [DONE].
  if (result.status != 200) {
    send(result.response);
  } else {
    for (const Json& d : result.rest)
      if (!send(DeltaChunk(meta, d))) return gone();
    send(FinalChunk(meta, result.response));
  }
  out.WriteChunk("data: [DONE]\n\n");
  out.EndStream();
  return true;
}

}  // namespace fgemma::server
