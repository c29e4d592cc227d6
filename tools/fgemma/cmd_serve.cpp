// fgemma serve: the OpenAI-compatible HTTP server (src/server/server.h).
#include <csignal>

#include "command.h"
#include "server/server.h"

namespace fgemma::cli {
namespace {

server::Server* g_server = nullptr;

int RunServe(const server::ServerOptions& o) {
  auto srv = server::Server::Create(o);
  if (!srv.ok()) return Fail(srv.status().ToString());
  g_server = srv.value().get();
  // httplib's stop() only flips a flag and shuts the socket, so calling it from the handler is safe enough.
  auto on_signal = [](int) {
    if (g_server) g_server->Stop();
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Status st = srv.value()->Run();
  g_server = nullptr;
  return st.ok() ? 0 : Fail(st.ToString());
}

CommandRegistration reg(90, [](CLI::App& app) -> std::function<int()> {
  auto o = std::make_shared<server::ServerOptions>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (/v1/chat/completions, /v1/models, /health)");
  cmd->add_option("--model", o->model_path, "model directory, .safetensors or .gguf")->required();
  cmd->add_option("--host", o->host, "address to bind (non-loopback requires --api-key)")->capture_default_str();
  cmd->add_option("--port", o->port, "port (0: any free port)")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "require Authorization: Bearer KEY on /v1/*");
  cmd->add_option("--sessions", o->sessions, "concurrent sessions sharing the model")->capture_default_str();
  cmd->add_flag("--trust-content-tokens", o->trust_content_tokens,
                "let control-token text in client content (messages, tool names, descriptions, enum values, "
                "arguments) become control tokens, as Hugging Face does (default: off, content is text)");
  cmd->add_option("--threads", o->threads, "threads of the thread pool all sessions share")->capture_default_str();
  cmd->add_option("--model-name", o->model_name, "model id clients send (default: the model path's name)");
  cmd->add_option("--context", o->context, "positions per session (bounds the prompt)")->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "generated tokens per request")->capture_default_str();
  cmd->add_option("--max-body", o->max_body_bytes, "request body limit in bytes (413 beyond)")->capture_default_str();
  cmd->add_option("--queue-timeout-ms", o->queue_timeout_ms, "wait for a free session before 503")->capture_default_str();
  cmd->add_option("--cache", o->cache_path, "catalog cache file");
  return [o] { return RunServe(*o); };
});

}  // namespace
}  // namespace fgemma::cli
