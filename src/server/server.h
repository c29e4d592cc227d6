// `fgemma serve`: an OpenAI-compatible HTTP server over a pool of FunctionCallers sharing one model.
//
// Routes: POST /v1/chat/completions (tools, tool_choice, stream via SSE), GET /v1/models,
// GET /health. Errors are {"error":{"message":...,"type":...}}; the status policy (docs/server.md "Server
// limits and status codes"): 400 malformed or invalid request, 401 API key, 404 route or model,
// 405 wrong method, 408 request too slow, 411 no body length, 413 body over --max-body however
// sent, 414/431 request line or headers too large, 415 not JSON, 429 queue full
// (Retry-After), 503 session wait timed out or draining for shutdown (Retry-After), 500 internal faults
// only. Without an API key only hosts whose every resolved address is loopback may be bound.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "util/status.h"

namespace fgemma::server {

// Bounds Server::Create checks (docs/limits.md): each session holds a KV cache of `context` rows,
// each HTTP worker a thread; past these a server only exhausts memory or the scheduler.
inline constexpr size_t kMaxServerSessions = 256;
inline constexpr size_t kMaxHttpWorkers = 4096;

struct ServerOptions {
  std::string model_path;
  std::string tokenizer_path;      // "" = the model's own vocabulary (LoadOptions::tokenizer_path)
  std::string model_name;          // "" = the model path's last component
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0 = any free port (see Server::port())
  std::string api_key;             // "" = no authentication (loopback only)
  // 0 = fit the machine (server/serve_shape.h): threads from the cores, sessions and context from
  // the memory left once the model is loaded.
  size_t sessions = 0;             // callers in the pool
  int threads = 0;                 // threads of the one pool every session shares
  size_t context = 0;              // positions per session (bounds the prompt)
  // Generated tokens per request (a request may ask for fewer): ResolveMaxTokens (0: 1024; at
  // most `context`).
  size_t max_tokens = 1024;
  size_t max_body_bytes = 1 << 20;
  int queue_timeout_ms = 30000;    // wait for a free session before answering 503
  size_t max_queue = 64;           // requests waiting for a session beyond which new ones get 429
  double request_timeout_s = 300;  // a call running past it stops (finish_reason "deadline"); 0 = none
  int read_timeout_s = 5;          // a whole request (head and body) from its first byte; each write
  int keep_alive_s = 5;            // idle time a kept-alive connection may wait for its next request
  size_t keep_alive_max = 100;     // requests per connection
  size_t http_workers = 0;         // threads answering complete chat requests; 0 = max(64, 8 x sessions)
  std::string cache_path;          // optional catalog cache file for the pool's first session
  bool trust_content_tokens = false;  // FunctionCallerOptions::trust_content_tokens
  bool batch = true;                // sessions decoding at once share forward passes (PassBatcher)
  double drain_s = 10;             // Shutdown(): wait for requests already received, at most this long
  std::string lora;                // the LoRA adapter the model name above runs with: "DIR[:SCALE]" ("" = none)
  // More models over the same base weights (mapped once): "NAME=DIR[:SCALE]" each, a PEFT LoRA
  // adapter with `sessions` callers (and catalog states) of its own; a request's `model` picks
  // NAME, or the base's name (the default when absent).
  std::vector<std::string> adapters;
};

class Server {
 public:
  // Loads the model and builds the pool; refuses a non-loopback host without an API key.
  static Result<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();

  // Binds (port 0: an ephemeral port) and serves on a background thread.
  Status Start();
  // Serves on the calling thread until Stop() or Shutdown() (from another thread).
  Status Run();
  // Stops at once: closes the listening socket; requests being answered still finish.
  void Stop();
  // Graceful stop (SIGTERM): from now on every new request gets 503 with Retry-After, while the
  // requests already received (body being read, queued for a session, being answered or streamed)
  // finish; once none is left, or after ServerOptions::drain_s, or once `abort` (polled) returns
  // true, Stop(). Returns when the listener is closed.
  void Shutdown(const std::function<bool()>& abort = {});
  // Chat requests received and not yet answered in full (reading, queued, running, streaming).
  size_t active_requests() const;
  int port() const { return port_; }
  // Connections closed for not sending a request (or its first byte) in time.
  uint64_t reaped_connections() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  Status Bind();
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace fgemma::server
