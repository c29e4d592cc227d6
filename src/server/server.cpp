#include "server/server.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>

#include "chat/chat_json.h"
#include "chat/request.h"
#include "runtime/engine.h"
#include "runtime/loaded_model.h"
#include "runtime/pass_batcher.h"
#include "server/caller_pool.h"
#include "server/chat_completion.h"
#include "server/host_address.h"
#include "server/http_loop.h"
#include "server/http_policy.h"
#include "server/openai_format.h"
#include "server/serve_shape.h"
#include "util/hash.h"
#include "util/run_limits.h"

namespace fgemma::server {

struct Server::Impl {
  ServerOptions options;
  std::string bind_address;  // the resolved address of options.host that was checked
  std::string shape_basis;   // how threads, sessions and context left at 0 were chosen ("" = all given)
  // A model the server answers for: the base (with --lora's adapter, if any), or a named LoRA
  // adapter over the same mapped weights; each with its sessions, catalog states and batcher.
  struct Variant {
    std::string name;
    std::shared_ptr<PassBatcher> batcher;  // its pass group (null: each session runs its own passes)
    std::unique_ptr<CallerPool> pool;
  };
  // Makes every session's caller (one model mapped once, adapters and pass groups shared).
  std::unique_ptr<Engine> engine;
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
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> client_disconnects{0};  // streams stopped because a write to the client failed
  std::atomic<size_t> in_flight{0};             // complete chat requests queued, waiting for or holding a session
  std::atomic<size_t> active{0};                // chat requests received, not yet answered in full
  std::atomic<bool> stopping{false};
  // Last: destroyed first, so no worker runs a request once the pools go.
  std::unique_ptr<http::Loop> loop;

  http::HeadVerdict Head(const http::Request& req);
  std::optional<http::Response> Admit(std::shared_ptr<void>* admission);
  http::Response QueueFull() const;
  http::Response Health() const;
  // `admission` (Admit's count) is released with the session, before the answer's last bytes.
  void ChatCompletions(const http::Request& req, http::ResponseWriter& out, std::shared_ptr<void>& admission);
  // Serves `name`: the base with `lora` ("DIR[:SCALE]", "" = none), its sessions and, with
  // batching, its pass group.
  Status AddVariant(const EngineConfig& base, const std::string& name, const std::string& lora);
};

namespace {

http::Response Error(int status, const std::string& message, const std::string& type) {
  http::Response r;
  r.status = status;
  r.body = DumpJson(ErrorBody(message, type));
  return r;
}

// The error type of a status the HTTP layer answers by itself.
std::string ErrorType(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "server_busy_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

// Everything that needs no body is decided from the head, before any byte of the body is read:
// an oversized, misdirected, unauthenticated, mistyped or unqueueable upload is refused unread
// (and its connection closed, so its body is never taken for a request). /health and /v1/models
// are answered here, on the I/O thread, whatever the workers are doing. Range is ignored: every
// answer is whole (200), never multipart.
http::HeadVerdict Server::Impl::Head(const http::Request& req) {
  http::HeadVerdict v;
  const auto refuse = [&](http::Response r) {
    v.respond = std::move(r);
    return v;
  };
  if (stopping) {
    http::Response r = Error(503, "the server is shutting down", "server_busy_error");
    r.headers.emplace_back("Retry-After", "5");
    return refuse(std::move(r));
  }
  const bool chat = req.path == "/v1/chat/completions";
  const bool readonly = req.path == "/health" || req.path == "/v1/models";
  if (!chat && !readonly) return refuse(Error(404, "no route for " + req.method + " " + req.path, "not_found_error"));
  if (chat ? req.method != "POST" : req.method != "GET" && req.method != "HEAD") {
    http::Response r = Error(405, req.method + " " + req.path + " is not allowed (only " + (chat ? "POST" : "GET") + ")",
                             "invalid_request_error");
    r.headers.emplace_back("Allow", chat ? "POST" : "GET, HEAD");
    return refuse(std::move(r));
  }
  if (readonly && req.HasBody())
    return refuse(Error(400, req.method + " " + req.path + " takes no request body", "invalid_request_error"));
  if (chat && req.framing == http::Framing::kNone)
    return refuse(Error(411, "POST " + req.path + " needs a body with Content-Length or Transfer-Encoding: chunked",
                        "invalid_request_error"));
  if (!options.api_key.empty() && req.path.rfind("/v1/", 0) == 0) {
    const std::string* auth = req.Find("authorization");
    if (!auth || *auth != "Bearer " + options.api_key)
      return refuse(Error(401, "missing or invalid API key (Authorization: Bearer ...)", "authentication_error"));
  }
  if (req.path == "/health") return refuse(Health());
  if (req.path == "/v1/models") {
    http::Response r;
    r.body = DumpJson(ModelsBody(Names()));
    return refuse(std::move(r));
  }
  const std::string* type = req.Find("content-type");
  const std::string content_type = type ? *type : "";
  if (!IsJsonContentType(content_type))
    return refuse(Error(
        415, "Content-Type must be application/json (optionally ; charset=utf-8), not \"" + content_type + "\"",
        "invalid_request_error"));
  // A full queue is refused before the body is read.
  if (in_flight.load() >= Sessions() + options.max_queue) return refuse(QueueFull());
  // Counted as received (Shutdown() waits for it) from here until it is answered or dropped.
  ++active;
  v.ticket = std::shared_ptr<void>(nullptr, [this](void*) { --active; });
  return v;
}

http::Response Server::Impl::QueueFull() const {
  http::Response r = Error(
      429, "too many requests waiting for a session (--max-queue " + std::to_string(options.max_queue) + ")",
      "rate_limit_error");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// Admission: at most sessions + --max-queue complete requests wait for or hold a session.
std::optional<http::Response> Server::Impl::Admit(std::shared_ptr<void>* admission) {
  if (in_flight.fetch_add(1) >= Sessions() + options.max_queue) {
    --in_flight;
    return QueueFull();
  }
  *admission = std::shared_ptr<void>(nullptr, [this](void*) { --in_flight; });
  return std::nullopt;
}

http::Response Server::Impl::Health() const {
  const size_t busy = Busy(), flight = in_flight.load();
  Json j = {{"status", stopping ? "stopping" : "ok"},
            {"sessions", Sessions()},
            {"busy", busy},
            {"queued", flight > busy ? flight - busy : 0},
            {"client_disconnects", client_disconnects.load()},
            {"reaped_connections", loop ? loop->timed_out() : 0}};
  PassBatcher::Stats total;
  bool batching = false;
  std::vector<const PassBatcher*> counted;  // models with one adapter spec share one group
  for (const Variant& v : variants) {
    if (!v.batcher || std::find(counted.begin(), counted.end(), v.batcher.get()) != counted.end()) continue;
    counted.push_back(v.batcher.get());
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
  http::Response r;
  r.body = DumpJson(j);
  return r;
}

// Parse, pick the model, lease a session, run and answer. The session and the admission go back as
// soon as the call ends, before the answer's last bytes: a client that has read its whole answer
// finds the session free (/health's "busy") and is not refused (429) for its own finished request.
void Server::Impl::ChatCompletions(const http::Request& req, http::ResponseWriter& out, std::shared_ptr<void>& admission) {
  const auto arrival = std::chrono::steady_clock::now();
  const auto send_error = [&](int status, const std::string& message, const std::string& type) {
    out.Send(Error(status, message, type));
  };
  auto body = ParseOrderedJson(req.body, "request body");
  if (!body.ok()) return send_error(400, body.status().message(), "invalid_request_error");
  if (!body->is_object()) return send_error(400, "request body must be a JSON object", "invalid_request_error");
  const OrderedJson& b = body.value();
  // `model` picks the base or one of its adapters (absent: the base).
  const Variant* variant = &variants.front();
  if (b.contains("model")) {
    if (!b["model"].is_string()) return send_error(400, "model: expected a string", "invalid_request_error");
    variant = Find(b["model"].get<std::string>());
    if (variant == nullptr) {
      std::string served;
      for (const std::string& name : Names()) served += (served.empty() ? "\"" : ", \"") + name + "\"";
      return send_error(404, "model \"" + b["model"].get<std::string>() + "\" does not exist (serving " + served + ")",
                        "not_found_error");
    }
  }
  // The caller refuses a token limit beyond its context (FunctionCaller::Call); the server's own
  // budget is only a cap, so it never exceeds the context (ResolveMaxTokens).
  auto parsed = ParseChatCall(b, ResolveMaxTokens(options.max_tokens, options.context), options.request_timeout_s, arrival);
  if (!parsed.ok()) return send_error(400, parsed.status().message(), "invalid_request_error");
  CallRequest& call = parsed->call;

  std::shared_ptr<CallerPool::Lease> lease = variant->pool->Acquire(
      Hash64(call.chat.tools_json.dump()), std::chrono::milliseconds(options.queue_timeout_ms));
  if (!lease) {
    http::Response r = Error(503, "all sessions are busy; retry later", "server_busy_error");
    r.headers.emplace_back("Retry-After", "1");
    return out.Send(r);
  }
  // Which pooled session answered (diagnostics; every session gives the same answer).
  const Header session_header{"X-Fgemma-Session", std::to_string(lease->index)};
  const ResponseMeta meta{"chatcmpl-" + std::to_string(next_id++), static_cast<int64_t>(std::time(nullptr)),
                          variant->name};
  const auto call_ended = [&] {
    lease.reset();
    admission.reset();
  };
  FunctionCaller& caller = lease->caller();
  if (!parsed->stream) {
    const ChatRun r = RunChatCall(caller, call, meta, {});
    call_ended();
    return SendChatRun(r, session_header, out);
  }
  if (!StreamChatCall(caller, call, meta, session_header, out, call_ended)) ++client_disconnects;
}

namespace {

// A model the server answers for, before loading: its name and the adapter it runs ("" = none).
struct ServedModel {
  std::string name, lora;
};

// The base under its name (with --lora's adapter, if any), then each named adapter NAME=DIR[:SCALE];
// names are checked before any weight is loaded.
Result<std::vector<ServedModel>> ServedModels(const ServerOptions& options) {
  std::string base_name = options.model_name;
  if (base_name.empty()) {
    std::filesystem::path p(options.model_path);
    base_name = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
  }
  std::vector<ServedModel> served = {{base_name, options.lora}};
  for (const std::string& spec : options.adapters) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return InvalidArgument("--lora " + spec + ": a named adapter is NAME=DIR[:SCALE]");
    const std::string name = spec.substr(0, eq);
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != std::string::npos)
      return InvalidArgument("--lora " + spec + ": the model name \"" + name + "\" may hold only letters, digits, '.', '_' and '-'");
    for (const ServedModel& s : served)
      if (s.name == name) return InvalidArgument("--lora " + spec + ": the model name \"" + name + "\" is served twice");
    served.push_back({name, spec.substr(eq + 1)});
  }
  return served;
}

// The refusals that need no model: a non-loopback host without a key, bad timeouts, thread,
// session and worker counts beyond the documented limits (docs/limits.md). Checked before the model
// loads, so an embedder that skips the CLI's flag checks gets the same refusals.
Status CheckServerOptions(const ServerOptions& options, const std::vector<std::string>& addresses) {
  if (!AllLoopback(addresses) && options.api_key.empty()) {
    std::string list;
    for (const auto& a : addresses) list += (list.empty() ? "" : ", ") + a;
    return InvalidArgument("refusing to listen on non-loopback host " + options.host + " (" + list +
                           ") without --api-key");
  }
  if (options.read_timeout_s <= 0 || options.keep_alive_s <= 0 || options.keep_alive_max == 0)
    return InvalidArgument("--read-timeout-s, --keep-alive-s and --keep-alive-max must be positive");
  FGEMMA_RETURN_IF_ERROR(CheckThreadCount(options.threads, "--threads"));
  if (options.sessions > kMaxServerSessions)
    return OutOfRange("--sessions " + std::to_string(options.sessions) + ": must be 1 to " +
                      std::to_string(kMaxServerSessions) + " (0: as many as memory allows, at most " +
                      std::to_string(kAutoMaxSessions) + ")");
  if (options.http_workers > kMaxHttpWorkers)
    return OutOfRange("--http-workers " + std::to_string(options.http_workers) + ": must be at most " +
                      std::to_string(kMaxHttpWorkers));
  return Status::Ok();
}

// The HTTP loop's limits. Workers well beyond the sessions: requests beyond the pool wait in
// Acquire (bounded by --max-queue and --queue-timeout-ms). Workers only ever get complete
// requests: slow or hostile connections are held by the I/O thread, never by a worker.
http::LoopOptions LoopOptionsFor(const ServerOptions& options) {
  http::LoopOptions lo;
  lo.limits.max_body = options.max_body_bytes;
  lo.request_timeout = std::chrono::seconds(options.read_timeout_s);
  lo.write_timeout = std::chrono::seconds(options.read_timeout_s);
  lo.idle_timeout = std::chrono::seconds(options.keep_alive_s);
  lo.keep_alive_max = options.keep_alive_max;
  lo.workers = options.http_workers ? options.http_workers : std::max<size_t>(64, options.sessions * 8);
  // Descriptors left for the model, caches and logs below the process's limit.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    lo.max_connections = std::min<size_t>(lo.max_connections, files.rlim_cur > 128 ? files.rlim_cur - 64 : 64);
  return lo;
}

// The server's flags as the engine's config. Continuous batching: a model's requests decoding at
// the same time share each pass over the weights (with its adapter).
EngineConfig EngineConfigOf(const ServerOptions& options) {
  EngineConfig config;
  config.threads = options.threads;
  config.context = options.context;
  config.cache_path = options.cache_path;
  config.trust_content_tokens = options.trust_content_tokens;
  config.max_tokens = options.max_tokens;
  config.share_passes = options.batch && options.sessions > 1;
  return config;
}

}  // namespace

Status Server::Impl::AddVariant(const EngineConfig& base, const std::string& name, const std::string& lora) {
  EngineConfig config = base;
  FGEMMA_TRY(config.lora, AdapterSpecOf(lora));
  Variant v;
  v.name = name;
  FGEMMA_TRY(v.pool, CallerPool::Create(*engine, config, options.sessions));
  v.batcher = engine->PassGroup(config);
  variants.push_back(std::move(v));
  return Status::Ok();
}

Result<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  // "Loopback" is what the name resolves to, every address of it, not how it is spelled.
  FGEMMA_TRY(std::vector<std::string> addresses, ResolveHost(options.host));
  FGEMMA_RETURN_IF_ERROR(CheckServerOptions(options, addresses));
  FGEMMA_TRY(std::vector<ServedModel> served, ServedModels(options));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // Bind the address that was checked: a second lookup could answer differently.
  impl->bind_address = addresses.front();
  LoadOptions load_options;
  load_options.tokenizer_path = options.tokenizer_path;
  FGEMMA_TRY(LoadedModel loaded, LoadModel(options.model_path, load_options));
  // Threads, sessions and context left at 0 fit the machine, sized once the weights are in memory.
  const ServeShape shape = ResolveServeShape(options.threads, options.sessions, options.context,
                                             loaded.model->config(), ReadMachineFacts());
  impl->options.threads = shape.threads;
  impl->options.sessions = shape.sessions;
  impl->options.context = shape.context;
  impl->shape_basis = shape.basis;
  EngineConfig config = EngineConfigOf(impl->options);
  impl->engine = Engine::Create(std::move(loaded), config);
  for (const ServedModel& s : served) {
    FGEMMA_RETURN_IF_ERROR(impl->AddVariant(config, s.name, s.lora));
    config.cache_path.clear();  // the cache file belongs to the base's name
  }
  // Request buffers of 32 KiB and more (bodies, long header lines, their JSON) are mapped on their
  // own and unmapped when freed. glibc would otherwise raise this threshold after the first such
  // free and serve later ones from the heap, where floods of large requests leave freed pages
  // behind; and a few arenas for the many HTTP threads keep freed memory where it is reused.
  mallopt(M_MMAP_THRESHOLD, 32 << 10);
  mallopt(M_ARENA_MAX, 4);
  Impl* raw = impl.get();
  http::Handlers handlers;
  handlers.head = [raw](const http::Request& req) { return raw->Head(req); };
  handlers.admit = [raw](const http::Request&, std::shared_ptr<void>* admission) { return raw->Admit(admission); };
  handlers.serve = [raw](http::Request& req, http::ResponseWriter& out, std::shared_ptr<void>& admission) {
    raw->ChatCompletions(req, out, admission);
  };
  handlers.error = [](int status, const std::string& message) { return Error(status, message, ErrorType(status)); };
  impl->loop = std::make_unique<http::Loop>(LoopOptionsFor(impl->options), std::move(handlers));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

uint64_t Server::reaped_connections() const { return impl_->loop->timed_out(); }

Status Server::Bind() {
  const auto& o = impl_->options;
  if (Status st = impl_->loop->Bind(impl_->bind_address, o.port); !st.ok())
    return IoError("cannot listen on " + o.host + " port " + std::to_string(o.port) + ": " + st.message());
  port_ = impl_->loop->port();
  return Status::Ok();
}

Status Server::Start() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  thread_ = std::thread([this] { impl_->loop->Run(); });
  return Status::Ok();
}

Status Server::Run() {
  FGEMMA_RETURN_IF_ERROR(Bind());
  std::string names;
  for (const std::string& name : impl_->Names()) names += (names.empty() ? "" : ", ") + name;
  const ServerOptions& o = impl_->options;
  std::fprintf(stderr, "fgemma: serving %s on http://%s:%d (%zu sessions, %d threads, context %zu%s%s)\n", names.c_str(),
               o.host.c_str(), port_, impl_->Sessions(), o.threads, o.context,
               impl_->shape_basis.empty() ? "" : "; chosen: ", impl_->shape_basis.c_str());
  impl_->loop->Run();
  return Status::Ok();
}

void Server::Stop() {
  impl_->stopping = true;
  impl_->loop->Stop();
}

void Server::Shutdown(const std::function<bool()>& abort) {
  impl_->stopping = true;  // Head() answers 503 from here on
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, impl_->options.drain_s)));
  while (impl_->active.load() > 0 && std::chrono::steady_clock::now() < until && !(abort && abort()))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Stop();
}

size_t Server::active_requests() const { return impl_->active.load(); }

}  // namespace fgemma::server
