// fgemma serve: the OpenAI-compatible HTTP server (src/server/server.h).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>
#include <vector>

#include "command.h"
#include "number_options.h"
#include "server/server.h"

namespace fgemma::cli {
namespace {

// Signals only count; a watcher thread acts on them (nothing else is safe in a handler).
std::atomic<int> g_signals{0};

// A --lora value names a model when it reads NAME=...: a name of letters, digits, '.', '_', '-'
// before the first '=' (a directory path holds a '/' there, or no '=' at all).
bool IsNamedAdapter(const std::string& spec) {
  const size_t eq = spec.find('=');
  return eq != std::string::npos && eq > 0 &&
         spec.substr(0, eq).find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
}

int RunServe(server::ServerOptions o, const std::vector<std::string>& loras) {
  for (const std::string& spec : loras) {
    if (IsNamedAdapter(spec)) {
      o.adapters.push_back(spec);
    } else if (o.lora.empty()) {
      o.lora = spec;
    } else {
      return Fail("--lora " + spec + ": the base model already runs with " + o.lora +
                  " (name further adapters: --lora NAME=DIR[:SCALE])");
    }
  }
  auto srv = server::Server::Create(o);
  if (!srv.ok()) return Fail(srv.status().ToString());
  server::Server& server = *srv.value();
  std::signal(SIGINT, [](int) { g_signals.fetch_add(1); });
  std::signal(SIGTERM, [](int) { g_signals.fetch_add(1); });
  // The first SIGINT/SIGTERM drains (new requests 503, those received finish, up to --drain-s);
  // a second one stops at once.
  std::atomic<bool> served{false};
  std::thread watcher([&] {
    while (!served && g_signals.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (served) return;
    std::fprintf(stderr, "fgemma: stopping: finishing %zu request(s) (at most %.0f s; signal again to stop now)\n",
                 server.active_requests(), o.drain_s);
    server.Shutdown([] { return g_signals.load() > 1; });
  });
  Status st = server.Run();
  served = true;
  watcher.join();
  return st.ok() ? 0 : Fail(st.ToString());
}

const CommandRegistration kServe(90, [](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<server::ServerOptions>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (/v1/chat/completions, /v1/models, /health)");
  cmd->add_option("--model", o->model_path, "model directory, .safetensors or .gguf")->required();
  cmd->add_option("--tokenizer", o->tokenizer_path, "tokenizer.json or directory (default: beside the model / in the GGUF)");
  auto loras = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--lora", *loras,
                  "PEFT LoRA adapter: DIR[:SCALE] for the model's own name, or NAME=DIR[:SCALE] (repeatable) to "
                  "serve the adapter over the same weights as model NAME (a request's \"model\" picks it)");
  cmd->add_option("--host", o->host, "address or name to bind (unless every address it resolves to is loopback, requires --api-key)")->capture_default_str();
  cmd->add_option("--port", o->port, "port (0: any free port)")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "require Authorization: Bearer KEY on /v1/*");
  cmd->add_option("--sessions", o->sessions,
                  "concurrent sessions sharing the model (0: as many as fit in half the memory available once the "
                  "model is loaded, 1 to 8)")->capture_default_str();
  cmd->add_flag("--trust-content-tokens", o->trust_content_tokens,
                "let control-token text in client content (messages, tool names, descriptions, enum values, "
                "arguments) become control tokens, as Hugging Face does (default: off, content is text)");
  AddThreadsOption(cmd, &o->threads, "threads of the thread pool all sessions share (0: the cores this process may use)")->capture_default_str();
  cmd->add_option("--model-name", o->model_name, "model id clients send (default: the model path's name)");
  // 0 would start a server that refuses every request; above the model's maximum the sessions are
  // refused when made, before the server listens.
  cmd->add_option("--context", o->context, "positions per session (bounds the prompt; 1 to the model's maximum; 0: 4096, halved down to 512 "
                  "while one session would not fit in half the available memory)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 24))  // 2^24: ModelConfig's bound on positions
      ->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "generated tokens per request (0: 1024; at most --context)")->capture_default_str();
  cmd->add_option("--max-body", o->max_body_bytes, "request body limit in bytes (413 beyond)")->capture_default_str();
  cmd->add_option("--queue-timeout-ms", o->queue_timeout_ms, "wait for a free session before 503")->capture_default_str();
  cmd->add_option("--max-queue", o->max_queue, "requests waiting for a session before 429")->capture_default_str();
  cmd->add_option("--request-timeout-s", o->request_timeout_s,
                  "a call running longer stops with finish_reason \"deadline\" (0: none)")
      ->check(SecondsUpToADay())->capture_default_str();
  cmd->add_option("--read-timeout-s", o->read_timeout_s,
                  "deadline for a whole request (head and body) from its first byte")->capture_default_str();
  cmd->add_option("--keep-alive-s", o->keep_alive_s, "idle wait for a kept-alive connection's next request")
      ->capture_default_str();
  cmd->add_option("--keep-alive-max", o->keep_alive_max, "requests per connection")->capture_default_str();
  cmd->add_option("--http-workers", o->http_workers, "HTTP worker threads (0: max(64, 8 x sessions))")
      ->capture_default_str();
  cmd->add_option("--cache", o->cache_path, "catalog cache file");
  cmd->add_flag("--no-batch{false}", o->batch,
                "run each session's passes alone instead of sharing passes between sessions decoding at once "
                "(answers are the same; for comparisons)");
  cmd->add_option("--drain-s", o->drain_s,
                  "on SIGINT/SIGTERM, wait this long for requests already received (new ones get 503)")
      ->check(SecondsUpToADay())->capture_default_str();
  return [o, loras] { return RunServe(*o, *loras); };
});

}  // namespace
}  // namespace fgemma::cli
