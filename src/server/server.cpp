#include "server/server.h"

#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "chat/chat_json.h"
#include "chat/request.h"
#include "runtime/loaded_model.h"
#include "server/caller_pool.h"
#include "server/chat_stream.h"
#include "server/openai_format.h"
#include "util/hash.h"

namespace fgemma::server {

bool IsLoopbackHost(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

struct Server::Impl {
  ServerOptions options;
  std::string model_name;
  std::unique_ptr<CallerPool> pool;
  httplib::Server http;
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> client_disconnects{0};  // streams stopped because a write to the client failed

  void Routes();
  void ChatCompletions(const httplib::Request& req, httplib::Response& res);
};

namespace {

void SendError(httplib::Response& res, int status, const std::string& message, const std::string& type) {
  res.status = status;
  res.set_content(DumpJson(ErrorBody(message, type)), "application/json");
}

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

}  // namespace

void Server::Impl::Routes() {
  // Size and key checks run before the body is read, so an oversized upload is refused early.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Content-Length") &&
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > options.max_body_bytes) {
      SendError(res, 413, "request body exceeds " + std::to_string(options.max_body_bytes) + " bytes",
                "invalid_request_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options.api_key.empty() && req.path.rfind("/v1/", 0) == 0 &&
        req.get_header_value("Authorization") != "Bearer " + options.api_key) {
      SendError(res, 401, "missing or invalid API key (Authorization: Bearer ...)", "authentication_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_payload_max_length(options.max_body_bytes);
  // Whatever httplib itself refuses (unknown route, chunked body over the limit) still gets a JSON body.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      SendError(res, 404, "no route for " + req.method + " " + req.path, "not_found_error");
    else if (res.status == 413)
      SendError(res, 413, "request body too large", "invalid_request_error");
    else
      SendError(res, res.status, "HTTP error " + std::to_string(res.status), "invalid_request_error");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    Json j = {{"status", "ok"},
              {"sessions", pool->size()},
              {"busy", pool->busy()},
              {"client_disconnects", client_disconnects.load()}};
    res.set_content(DumpJson(j), "application/json");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(DumpJson(ModelsBody(model_name)), "application/json");
  });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res) { ChatCompletions(req, res); });
}

void Server::Impl::ChatCompletions(const httplib::Request& req, httplib::Response& res) {
  auto body = ParseOrderedJson(req.body, "request body");
  if (!body.ok()) return SendError(res, 400, body.status().message(), "invalid_request_error");
  if (!body->is_object()) return SendError(res, 400, "request body must be a JSON object", "invalid_request_error");
  const OrderedJson& b = body.value();
  if (b.contains("model") && (!b["model"].is_string() || b["model"].get<std::string>() != model_name))
    return SendError(res, 404, "model " + b["model"].dump() + " does not exist (serving \"" + model_name + "\")",
                     "not_found_error");
  auto request = ParseChatRequest(b, RequestFormat::kOpenAI);
  if (!request.ok()) return SendError(res, 400, request.status().message(), "invalid_request_error");
  auto choice = ToolChoiceOfBody(b, request->tools);
  if (!choice.ok()) return SendError(res, 400, choice.status().message(), "invalid_request_error");
  size_t max_tokens = options.max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!b.contains(key) || b[key].is_null()) continue;
    if (!b[key].is_number_unsigned() || b[key].get<size_t>() == 0)
      return SendError(res, 400, std::string(key) + " must be a positive integer", "invalid_request_error");
    max_tokens = std::min(max_tokens, b[key].get<size_t>());
  }
  const bool stream = b.contains("stream") && b["stream"].is_boolean() && b["stream"].get<bool>();

  const uint64_t catalog_key = Hash64(request->tools_json.dump());
  std::shared_ptr<CallerPool::Lease> lease =
      pool->Acquire(catalog_key, std::chrono::milliseconds(options.queue_timeout_ms));
  if (!lease) return SendError(res, 503, "all sessions are busy; retry later", "server_busy_error");
  // Which pooled session answered (diagnostics; every session gives the same answer).
  res.set_header("X-Fgemma-Session", std::to_string(lease->index));

  ResponseMeta meta{"chatcmpl-" + std::to_string(next_id++), static_cast<int64_t>(std::time(nullptr)), model_name};
  // Runs the call, feeding each generated token to a ChatStream; `emit` (streaming only) gets the
  // deltas as they complete and stops the call by returning false (the client went away).
  // A call stopped by max_tokens (FinishReason::kLength) answers finish_reason "length" with what
  // was generated so far.
  struct Run {
    int status = 200;
    Json response;
    std::vector<Json> rest;    // deltas the stream still lacks to equal the response's message
    bool emit_failed = false;
  };
  using Emit = std::function<bool(const std::vector<Json>&)>;
  // Shared, not copied, by the copies of `run` (the streaming provider holds one); it runs once.
  auto call = std::make_shared<CallRequest>(CallRequest{std::move(request).value(), std::move(choice).value()});
  call->limits.max_tokens = max_tokens;
  auto run = [this, lease, call, meta](const Emit& emit) -> Run {
    Run r;
    ChatStream stream(lease->caller().tokenizer(), call->chat.tools, meta);
    Status stream_error;
    std::vector<Json> deltas;
    call->on_token = [&](int32_t id) {
      deltas.clear();
      if (Status st = stream.Push(id, &deltas); !st.ok()) {
        stream_error = st;
        return false;
      }
      if (emit && !deltas.empty() && !emit(deltas)) {
        r.emit_failed = true;
        return false;
      }
      return true;
    };
    auto outcome = lease->caller().Call(*call);
    call->on_token = nullptr;  // it refers to this frame
    lease->caller().TakeWarnings();
    if (r.emit_failed) return r;
    if (!stream_error.ok()) {
      r.status = 500;
      r.response = ErrorBody(stream_error.message(), "server_error");
      return r;
    }
    if (!outcome.ok()) {
      r.status = HttpStatusFor(outcome.status());
      r.response = ErrorBody(outcome.status().message(), "invalid_request_error");
      return r;
    }
    if (outcome->finish_reason == FinishReason::kLength) {
      r.response = LengthResponse(meta, stream.PartialMessage(), outcome->timing.generated_tokens);
    } else {
      r.response = CompletionResponse(meta, outcome.value());
    }
    r.rest = stream.Complete(r.response["choices"][0]["message"]);
    return r;
  };

  if (!stream) {
    Run r = run({});
    res.status = r.status;
    res.set_content(DumpJson(r.response), "application/json");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [this, run, meta](size_t, httplib::DataSink& sink) {
    auto send = [&](const Json& j) {
      const std::string event = "data: " + DumpJson(j) + "\n\n";
      return sink.write(event.data(), event.size());
    };
    // Chunks go out as the tokens completing them are generated; a failed write (the client is
    // gone) stops the generation at that token.
    auto emit = [&](const std::vector<Json>& deltas) {
      for (const Json& d : deltas) {
        if (!send(DeltaChunk(meta, d))) return false;
      }
      return true;
    };
    if (!send(RoleChunk(meta))) {
      ++client_disconnects;
      return false;
    }
    Run r = run(emit);
    if (r.emit_failed) {
      ++client_disconnects;
      return false;
    }
    if (r.status != 200) {
      send(r.response);
    } else {
      emit(r.rest);
      send(FinalChunk(meta, r.response));
    }
    const std::string done = "data: [DONE]\n\n";
    sink.write(done.data(), done.size());
    sink.done();
    return true;
  });
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  if (!IsLoopbackHost(options.host) && options.api_key.empty())
    return InvalidArgument("refusing to listen on non-loopback host " + options.host + " without --api-key");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->model_name = options.model_name;
  if (impl->model_name.empty()) {
    std::filesystem::path p(options.model_path);
    impl->model_name = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
  }
  FGEMMA_TRY(LoadedModel loaded, LoadModel(options.model_path));
  FunctionCallerOptions fo;
  fo.threads = options.threads;
  fo.context = options.context;
  fo.cache_path = options.cache_path;
  fo.trust_content_tokens = options.trust_content_tokens;
  FGEMMA_TRY(impl->pool, CallerPool::Create(loaded, fo, options.sessions));
  // Enough HTTP workers that requests beyond the pool wait in Acquire (and time out as 503)
  // rather than unseen in the socket backlog.
  const size_t workers = std::max<size_t>(8, options.sessions * 4);
  impl->http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  impl->Routes();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

Status Server::Bind() {
  const auto& o = impl_->options;
  if (o.port == 0) {
    port_ = impl_->http.bind_to_any_port(o.host);
  } else {
    port_ = impl_->http.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (port_ <= 0) return IoError("cannot listen on " + o.host + ":" + std::to_string(o.port));
  return Status::Ok();
}

Status Server::Start() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  thread_ = std::thread([this] { impl_->http.listen_after_bind(); });
  return Status::Ok();
}

Status Server::Run() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  std::fprintf(stderr, "fgemma: serving %s on http://%s:%d (%zu sessions)\n", impl_->model_name.c_str(),
               impl_->options.host.c_str(), port_, impl_->pool->size());
  if (!impl_->http.listen_after_bind()) return IoError("server stopped with an error");
  return Status::Ok();
}

void Server::Stop() { impl_->http.stop(); }

}  // namespace fgemma::server
