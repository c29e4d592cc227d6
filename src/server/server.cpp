#include "server/server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>

#include "chat/chat_json.h"
#include "chat/request.h"
#include "runtime/loaded_model.h"
#include "runtime/pass_batcher.h"
#include "util/thread_pool.h"
#include "server/caller_pool.h"
#include "server/chat_stream.h"
#include "server/connection_reaper.h"
#include "server/host_address.h"
#include "server/http_policy.h"
#include "server/openai_format.h"
#include "util/hash.h"

namespace fgemma::server {

struct Server::Impl {
  ServerOptions options;
  std::string bind_address;  // the resolved address of options.host that was checked
  // A model the server answers for: the base (with --lora's adapter, if any), or a named LoRA
  // adapter over the same mapped weights; each with its sessions, catalog states and batcher.
  struct Variant {
    std::string name;
    std::shared_ptr<PassBatcher> batcher;  // null: each session runs its own passes
    std::unique_ptr<CallerPool> pool;
  };
  std::vector<Variant> variants;  // [0]: the base's name, the default

  const Variant* Find(const std::string& name) const {
    for (const Variant& v : variants)
      if (v.name == name) return &v;
    return nullptr;
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const Variant& v : variants) names.push_back(v.name);
    return names;
  }
  size_t Sessions() const {
    size_t n = 0;
    for (const Variant& v : variants) n += v.pool->size();
    return n;
  }
  size_t Busy() const {
    size_t n = 0;
    for (const Variant& v : variants) n += v.pool->busy();
    return n;
  }
  httplib::Server http;
  std::unique_ptr<ConnectionReaper> reaper;
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> client_disconnects{0};  // streams stopped because a write to the client failed
  std::atomic<size_t> in_flight{0};             // requests holding or waiting for a session
  std::atomic<size_t> active{0};                // chat requests received, not yet answered in full
  std::atomic<bool> stopping{false};
  int listen_fd = -1;

  void Routes();
  void ChatCompletions(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
};

namespace {

void SendError(httplib::Response& res, int status, const std::string& message, const std::string& type) {
  res.status = status;
  res.set_content(DumpJson(ErrorBody(message, type)), "application/json");
}

// For answers given without reading the whole body: the unread rest must not be taken for the
// next request on a kept-alive connection, so the client is told to close it.
void SendErrorAndClose(httplib::Response& res, int status, const std::string& message, const std::string& type) {
  SendError(res, status, message, type);
  res.set_header("Connection", "close");
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
  // Checks that need no body run before any byte of it is read: an oversized, misdirected or
  // unauthenticated upload is refused without reading it.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (reaper) reaper->Touch(req.remote_addr, req.remote_port);
    if (stopping) {
      res.set_header("Retry-After", "5");
      SendErrorAndClose(res, 503, "the server is shutting down", "server_busy_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Content-Length") &&
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > options.max_body_bytes) {
      SendErrorAndClose(res, 413, "request body exceeds --max-body " + std::to_string(options.max_body_bytes) + " bytes",
                "invalid_request_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    // Only the chat route reads a body (under its own limit); httplib would read any other whole,
    // a chunked one without a limit.
    const bool chat = req.method == "POST" && req.path == "/v1/chat/completions";
    const bool has_body = req.has_header("Transfer-Encoding") ||
                          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
    if (!chat && has_body) {
      const bool known = req.path == "/health" || req.path == "/v1/models" || req.path == "/v1/chat/completions";
      if (known)
        SendErrorAndClose(res, 400, req.method + " " + req.path + " takes no request body", "invalid_request_error");
      else
        SendErrorAndClose(res, 404, "no route for " + req.method + " " + req.path, "not_found_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options.api_key.empty() && req.path.rfind("/v1/", 0) == 0 &&
        req.get_header_value("Authorization") != "Bearer " + options.api_key) {
      SendErrorAndClose(res, 401, "missing or invalid API key (Authorization: Bearer ...)", "authentication_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_payload_max_length(options.max_body_bytes);
  // Whatever httplib itself refuses (unknown route, malformed HTTP) still gets a JSON body.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      SendError(res, 404, "no route for " + req.method + " " + req.path, "not_found_error");
    else if (res.status == 413)
      SendError(res, 413, "request body too large", "invalid_request_error");
    else if (res.status == 414)
      SendError(res, 414, "request line too long", "invalid_request_error");
    else if (res.status == 400)
      SendError(res, 400, "malformed HTTP request", "invalid_request_error");
    else
      SendError(res, res.status, "HTTP error " + std::to_string(res.status), "invalid_request_error");
  });
  // A handler that throws is a bug of ours (inputs are checked field by field): a 500 naming it.
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "fgemma: internal error in a request handler: %s\n", what.c_str());
    SendError(res, 500, "internal error: " + what, "server_error");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const size_t busy = Busy(), flight = in_flight.load();
    Json j = {{"status", stopping ? "stopping" : "ok"},
              {"sessions", Sessions()},
              {"busy", busy},
              {"queued", flight > busy ? flight - busy : 0},
              {"client_disconnects", client_disconnects.load()},
              {"reaped_connections", reaper ? reaper->reaped() : 0}};
    PassBatcher::Stats total;
    bool batching = false;
    for (const Variant& v : variants) {
      if (!v.batcher) continue;
      batching = true;
      const PassBatcher::Stats st = v.batcher->stats();
      total.passes += st.passes;
      total.rows += st.rows;
      total.shared += st.shared;
      total.max_sessions = std::max(total.max_sessions, st.max_sessions);
    }
    if (batching)
      j["batching"] = {{"passes", total.passes},
                       {"rows", total.rows},
                       {"shared_passes", total.shared},
                       {"max_sessions_per_pass", total.max_sessions}};
    if (variants.size() > 1) {
      j["models"] = Json::array();
      for (const Variant& v : variants)
        j["models"].push_back({{"id", v.name}, {"sessions", v.pool->size()}, {"busy", v.pool->busy()}});
    }
    res.set_content(DumpJson(j), "application/json");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(DumpJson(ModelsBody(Names())), "application/json");
  });
  http.Post("/v1/chat/completions",
            httplib::Server::HandlerWithContentReader(
                [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
                  ChatCompletions(req, res, reader);
                }));
}

namespace {

// A streamed call runs on its own thread so that everything that can fail before the first token
// (the prompt too long for the context, a tool_choice the catalog cannot meet, ...) is answered
// with its status and a JSON error instead of a 200 followed by an error event.
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

void Server::Impl::ChatCompletions(const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
  const auto arrival = std::chrono::steady_clock::now();
  // Held until the answer is complete (a streamed one outlives this handler through `run`), so a
  // graceful Shutdown() waits for it.
  ++active;
  std::shared_ptr<void> received(nullptr, [this](void*) { --active; });
  auto busy = reaper ? reaper->Busy(req.remote_addr, req.remote_port) : nullptr;
  // Refused before the body is read (a multipart body would not even reach a plain reader).
  const std::string content_type = req.get_header_value("Content-Type");
  if (!IsJsonContentType(content_type)) {
    const std::string message =
        "Content-Type must be application/json (optionally ; charset=utf-8), not \"" + content_type + "\"";
    // Read and dropped (up to --max-body) so a kept-alive connection stays usable; a multipart
    // body would need httplib's form parser, so its connection is closed instead.
    if (req.is_multipart_form_data()) return SendErrorAndClose(res, 415, message, "invalid_request_error");
    size_t dropped = 0;
    const auto until = arrival + std::chrono::seconds(options.read_timeout_s);
    const bool drained = reader([&](const char*, size_t n) {
      return (dropped += n) <= options.max_body_bytes && std::chrono::steady_clock::now() <= until;
    });
    return drained ? SendError(res, 415, message, "invalid_request_error")
                   : SendErrorAndClose(res, 415, message, "invalid_request_error");
  }
  // The body arrives through a running count whatever its transfer (Content-Length, chunked):
  // past --max-body the read stops, so no more than the limit is ever held.
  std::string text;
  bool too_large = false, too_slow = false;
  const auto read_deadline = arrival + std::chrono::seconds(options.read_timeout_s);
  const bool read_ok = reader([&](const char* data, size_t n) {
    if (text.size() + n > options.max_body_bytes) return !(too_large = true);
    if (std::chrono::steady_clock::now() > read_deadline) return !(too_slow = true);
    text.append(data, n);
    return true;
  });
  if (too_large)
    return SendErrorAndClose(res, 413, "request body exceeds --max-body " + std::to_string(options.max_body_bytes) + " bytes",
                     "invalid_request_error");
  if (too_slow)
    return SendErrorAndClose(res, 408, "request body not received within " + std::to_string(options.read_timeout_s) + " s",
                     "invalid_request_error");
  if (!read_ok) return SendErrorAndClose(res, 400, "could not read the request body", "invalid_request_error");

  auto body = ParseOrderedJson(text, "request body");
  if (!body.ok()) return SendError(res, 400, body.status().message(), "invalid_request_error");
  if (!body->is_object()) return SendError(res, 400, "request body must be a JSON object", "invalid_request_error");
  const OrderedJson& b = body.value();
  // `model` picks the base or one of its adapters (absent: the base).
  const Variant* variant = &variants.front();
  if (b.contains("model")) {
    if (!b["model"].is_string()) return SendError(res, 400, "model: expected a string", "invalid_request_error");
    variant = Find(b["model"].get<std::string>());
    if (variant == nullptr) {
      std::string served;
      for (const std::string& name : Names()) served += (served.empty() ? "\"" : ", \"") + name + "\"";
      return SendError(res, 404, "model \"" + b["model"].get<std::string>() + "\" does not exist (serving " + served + ")",
                       "not_found_error");
    }
  }
  if (b.contains("stream") && !b["stream"].is_boolean() && !b["stream"].is_null())
    return SendError(res, 400, "stream: expected a boolean", "invalid_request_error");
  // The request parser checks each field's type; should a library type error still escape it,
  // it is this request's error (400), not a fault of the server.
  Result<ChatRequest> request = InvalidArgument("unparsed");
  Result<ToolChoice> choice = InvalidArgument("unparsed");
  try {
    request = ParseChatRequest(b, RequestFormat::kOpenAI);
    if (request.ok()) choice = ToolChoiceOfBody(b, request->tools);
  } catch (const nlohmann::json::exception& e) {
    return SendError(res, 400, std::string("invalid request: ") + e.what(), "invalid_request_error");
  }
  if (!request.ok()) return SendError(res, 400, request.status().message(), "invalid_request_error");
  if (!choice.ok()) return SendError(res, 400, choice.status().message(), "invalid_request_error");
  // The caller refuses a token limit beyond its context (FunctionCaller::Call); the server's own
  // default is only a cap, so it never exceeds the context.
  size_t max_tokens = std::min(options.max_tokens, options.context);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!b.contains(key) || b[key].is_null()) continue;
    if (!b[key].is_number_unsigned() || b[key].get<size_t>() == 0)
      return SendError(res, 400, std::string(key) + " must be a positive integer", "invalid_request_error");
    max_tokens = std::min(max_tokens, b[key].get<size_t>());
  }
  const bool stream = b.contains("stream") && b["stream"].is_boolean() && b["stream"].get<bool>();

  // Admission: at most sessions + --max-queue requests hold or wait for a session.
  if (in_flight.fetch_add(1) >= Sessions() + options.max_queue) {
    --in_flight;
    res.set_header("Retry-After", "1");
    return SendError(res, 429,
                     "too many requests waiting for a session (--max-queue " + std::to_string(options.max_queue) + ")",
                     "rate_limit_error");
  }
  std::shared_ptr<void> admitted(nullptr, [this](void*) { --in_flight; });
  const uint64_t catalog_key = Hash64(request->tools_json.dump());
  std::shared_ptr<CallerPool::Lease> lease =
      variant->pool->Acquire(catalog_key, std::chrono::milliseconds(options.queue_timeout_ms));
  if (!lease) {
    res.set_header("Retry-After", "1");
    return SendError(res, 503, "all sessions are busy; retry later", "server_busy_error");
  }
  // Which pooled session answered (diagnostics; every session gives the same answer).
  res.set_header("X-Fgemma-Session", std::to_string(lease->index));

  ResponseMeta meta{"chatcmpl-" + std::to_string(next_id++), static_cast<int64_t>(std::time(nullptr)), variant->name};
  // Runs the call, feeding each generated token to a ChatStream; `emit` (streaming only) gets the
  // deltas of each token (maybe none) as they complete and stops the call by returning false.
  // A call stopped by max_tokens (FinishReason::kLength) or by --request-timeout-s
  // (kDeadline) answers finish_reason "length" / "deadline" with what was generated so far.
  struct Run {
    int status = 200;
    Json response;
    std::vector<Json> rest;    // deltas the stream still lacks to equal the response's message
    bool emit_failed = false;
  };
  using Emit = std::function<bool(const std::vector<Json>&)>;
  // Shared, not copied, by the copies of `run` (the streaming job holds one); it runs once.
  auto call = std::make_shared<CallRequest>(CallRequest{std::move(request).value(), std::move(choice).value(), {}, {}});
  call->limits.max_tokens = max_tokens;
  if (options.request_timeout_s > 0)
    call->limits.deadline = arrival + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                          std::chrono::duration<double>(options.request_timeout_s));
  auto run = [this, lease, admitted, received, call, meta](const Emit& emit) -> Run {
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
      if (emit && !emit(deltas)) {
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
  };

  if (!stream) {
    Run r = run({});
    res.status = r.status;
    res.set_content(DumpJson(r.response), "application/json");
    return;
  }
  auto job = std::make_shared<StreamJob>();
  auto result = std::make_shared<Run>();
  call->limits.cancel = &job->cancel;
  StreamJob* j = job.get();
  job->thread = std::thread([j, run, result] {
    Run r = run([j](const std::vector<Json>& deltas) {
      std::lock_guard lock(j->mu);
      j->started = true;
      j->deltas.insert(j->deltas.end(), deltas.begin(), deltas.end());
      j->cv.notify_all();
      return !j->cancel.load();
    });
    std::lock_guard lock(j->mu);
    *result = std::move(r);
    j->finished = true;
    j->cv.notify_all();
  });
  {
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->started || job->finished; });
    if (!job->started && result->status != 200) {
      res.status = result->status;
      res.set_content(DumpJson(result->response), "application/json");
      return;
    }
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [this, job, result, meta, busy](size_t, httplib::DataSink& sink) {
        auto send = [&](const Json& j) {
          const std::string event = "data: " + DumpJson(j) + "\n\n";
          return sink.write(event.data(), event.size());
        };
        // A failed write (the client is gone) cancels the generation at its next token.
        auto gone = [&] {
          job->cancel = true;
          ++client_disconnects;
          return false;
        };
        if (!send(RoleChunk(meta))) return gone();
        std::unique_lock lock(job->mu);
        while (true) {
          job->cv.wait(lock, [&] { return !job->deltas.empty() || job->finished; });
          while (!job->deltas.empty()) {
            Json d = std::move(job->deltas.front());
            job->deltas.pop_front();
            lock.unlock();
            const bool ok = send(DeltaChunk(meta, d));
            lock.lock();
            if (!ok) return gone();
          }
          if (job->finished) break;
        }
        lock.unlock();
        if (job->thread.joinable()) job->thread.join();
        if (result->status != 200) {
          send(result->response);
        } else {
          for (const Json& d : result->rest)
            if (!send(DeltaChunk(meta, d))) return gone();
          send(FinalChunk(meta, result->response));
        }
        const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
        sink.done();
        return true;
      });
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  // "Loopback" is what the name resolves to, every address of it, not how it is spelled.
  FGEMMA_TRY(std::vector<std::string> addresses, ResolveHost(options.host));
  if (!AllLoopback(addresses) && options.api_key.empty()) {
    std::string list;
    for (const auto& a : addresses) list += (list.empty() ? "" : ", ") + a;
    return InvalidArgument("refusing to listen on non-loopback host " + options.host + " (" + list +
                           ") without --api-key");
  }
  if (options.read_timeout_s <= 0 || options.keep_alive_s <= 0 || options.keep_alive_max == 0)
    return InvalidArgument("--read-timeout-s, --keep-alive-s and --keep-alive-max must be positive");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // Bind the address that was checked: a second lookup could answer differently.
  impl->bind_address = addresses.front();
  std::string base_name = options.model_name;
  if (base_name.empty()) {
    std::filesystem::path p(options.model_path);
    base_name = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
  }
  // The served models: the base under its name (with --lora's adapter, if any), then each named
  // adapter; their names are checked before the weights are loaded.
  struct Served {
    std::string name, lora;
  };
  std::vector<Served> served = {{base_name, options.lora}};
  for (const std::string& spec : options.adapters) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return InvalidArgument("--lora " + spec + ": a named adapter is NAME=DIR[:SCALE]");
    const std::string name = spec.substr(0, eq);
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != std::string::npos)
      return InvalidArgument("--lora " + spec + ": the model name \"" + name + "\" may hold only letters, digits, '.', '_' and '-'");
    for (const Served& s : served)
      if (s.name == name) return InvalidArgument("--lora " + spec + ": the model name \"" + name + "\" is served twice");
    served.push_back({name, spec.substr(eq + 1)});
  }
  FGEMMA_TRY(LoadedModel loaded, LoadModel(options.model_path));
  FunctionCallerOptions base_options;
  base_options.threads = options.threads;
  base_options.context = options.context;
  base_options.cache_path = options.cache_path;
  base_options.trust_content_tokens = options.trust_content_tokens;
  base_options.pool = SharedThreadPool(options.threads);  // one pool for every model's sessions
  for (const Served& s : served) {
    FunctionCallerOptions fo = base_options;
    if (&s != &served.front()) fo.cache_path.clear();  // the cache file belongs to the base's name
    if (!s.lora.empty()) {
      FGEMMA_TRY(LoraSpec spec, ParseLoraSpec(s.lora));
      FGEMMA_TRY(fo.lora, LoraAdapter::Load(spec, loaded.model->config()));
      FGEMMA_RETURN_IF_ERROR(fo.lora->CheckFits(*loaded.model));
    }
    Impl::Variant v;
    v.name = s.name;
    if (options.batch && options.sessions > 1) {
      // Continuous batching: this model's requests decoding at the same time share each pass over
      // the weights (with its adapter).
      FGEMMA_TRY(v.batcher, PassBatcher::Create(loaded.model, 256, options.context, fo.pool, fo.lora));
      fo.batcher = v.batcher;
    }
    FGEMMA_TRY(v.pool, CallerPool::Create(loaded, fo, options.sessions));
    impl->variants.push_back(std::move(v));
  }
  // Workers well beyond the sessions: requests beyond the pool wait in Acquire (bounded by
  // --max-queue and --queue-timeout-ms) and slow clients, each cut after --read-timeout-s, cannot
  // hold them all, so /health stays answerable.
  const size_t workers = options.http_workers ? options.http_workers : std::max<size_t>(64, options.sessions * 8);
  impl->http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  impl->http.set_read_timeout(options.read_timeout_s, 0);
  impl->http.set_write_timeout(options.read_timeout_s, 0);
  impl->http.set_keep_alive_timeout(options.keep_alive_s);
  impl->http.set_keep_alive_max_count(options.keep_alive_max);
  // The listening socket is the server's alone: SO_REUSEADDR (restart while old connections are
  // in TIME_WAIT) but not httplib's default SO_REUSEPORT, which lets another process bind the
  // same port and take part of the traffic.
  Impl* raw = impl.get();
  impl->http.set_socket_options([raw](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    raw->listen_fd = sock;  // the last one offered is the one bound
  });
  impl->reaper = std::make_unique<ConnectionReaper>(std::chrono::seconds(options.read_timeout_s + options.keep_alive_s));
  impl->Routes();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
  if (thread_.joinable()) thread_.join();
  impl_->reaper->Stop();
}

uint64_t Server::reaped_connections() const { return impl_->reaper->reaped(); }

Status Server::Bind() {
  const auto& o = impl_->options;
  errno = 0;
  if (o.port == 0) {
    port_ = impl_->http.bind_to_any_port(impl_->bind_address);
  } else {
    port_ = impl_->http.bind_to_port(impl_->bind_address, o.port) ? o.port : -1;
  }
  if (port_ <= 0) {
    const int err = errno;
    std::string why = err == EADDRINUSE ? "port " + std::to_string(o.port) + " is already in use (another server?)"
                      : err           ? std::string(std::strerror(err))
                                      : "bind failed";
    return IoError("cannot listen on " + o.host + " port " + std::to_string(o.port) + ": " + why);
  }
  // httplib listens with a backlog of 5: under a burst of connections the kernel drops SYNs and
  // clients retry a second later (a /health probe then takes over 1 s). A second listen() on the
  // bound socket only raises the backlog.
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, 1024);
  impl_->reaper->Start(port_);
  return Status::Ok();
}

Status Server::Start() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  thread_ = std::thread([this] { impl_->http.listen_after_bind(); });
  return Status::Ok();
}

Status Server::Run() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  std::string names;
  for (const std::string& name : impl_->Names()) names += (names.empty() ? "" : ", ") + name;
  std::fprintf(stderr, "fgemma: serving %s on http://%s:%d (%zu sessions)\n", names.c_str(), impl_->options.host.c_str(),
               port_, impl_->Sessions());
  if (!impl_->http.listen_after_bind()) return IoError("server stopped with an error");
  return Status::Ok();
}

void Server::Stop() {
  impl_->stopping = true;
  impl_->http.stop();
}

void Server::Shutdown(const std::function<bool()>& abort) {
  impl_->stopping = true;  // the pre-routing handler answers 503 from here on
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, impl_->options.drain_s)));
  while (impl_->active.load() > 0 && std::chrono::steady_clock::now() < until && !(abort && abort()))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Stop();
}

size_t Server::active_requests() const { return impl_->active.load(); }

}  // namespace fgemma::server
