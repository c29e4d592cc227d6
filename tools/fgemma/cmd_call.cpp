// fgemma call: an utterance and a tool catalog in, a validated function call out (as JSON).
#include <cstdio>
#include <optional>

#include "call_common.h"
#include "command.h"
#include "number_options.h"
#include "lora_option.h"
#include "runtime/follow_text.h"
#include "runtime/engine.h"

namespace fgemma::cli {
namespace {

struct CallArgs {
  CallInputs in;
  std::string model, cache, tokenizer, lora;
  int threads = 0;
  size_t repeat = 1;
  bool no_restricted_head = false, no_jump_forward = false, no_draft = false, trust_content_tokens = false,
       no_prompt_reuse = false;
  std::string follow;
};

int RunCall(const CallArgs& a) {
  auto request = BuildCallRequest(a.in);
  if (!request.ok()) return Fail(request.status().ToString());
  EngineConfig config;
  config.threads = a.threads;
  config.cache_path = a.cache;
  config.decoding.restricted_head = !a.no_restricted_head;
  config.decoding.jump_forward = !a.no_jump_forward;
  config.decoding.draft = !a.no_draft;
  config.reuse_prompt = !a.no_prompt_reuse;
  config.trust_content_tokens = a.trust_content_tokens;
  auto lora = AdapterSpecOf(a.lora);
  if (!lora.ok()) return Fail(lora.status().ToString());
  config.lora = lora.value();
  auto engine = Engine::Load(a.model, LoadOptions{.tokenizer_path = a.tokenizer}, config);
  if (!engine.ok()) return Fail(engine.status().ToString());
  auto caller = engine.value()->NewCaller();
  if (!caller.ok()) return Fail(caller.status().ToString());
  std::optional<FollowText> follow;
  if (!a.follow.empty()) caller.value()->set_choice_hook(&follow.emplace(caller.value()->constraint_vocab(), a.follow));
  int rc = 0;
  for (size_t i = 0; i < std::max<size_t>(1, a.repeat); ++i) {
    auto outcome = caller.value()->Call(request.value());
    for (const auto& w : caller.value()->TakeWarnings()) std::fprintf(stderr, "fgemma: warning: %s\n", w.c_str());
    if (!outcome.ok()) return Fail(outcome.status().ToString());
    std::printf("%s\n", CallOutcomeToJson(outcome.value()).dump().c_str());
    if (!outcome->parsed.ok()) rc = 2;
  }
  return rc;
}

const CommandRegistration kCall(50, [](CLI::App& app) -> std::function<int()> {
  auto a = std::make_shared<CallArgs>();
  auto* cmd = app.add_subcommand("call", "Turn an utterance into a function call against a tool catalog (prints JSON)");
  cmd->add_option("--model", a->model, "model directory, .safetensors or .gguf")->required();
  cmd->add_option("--tools", a->in.tools_path, "tool catalog: JSON array of {\"type\":\"function\",\"function\":{...}}")->required();
  AddLoraOption(cmd, &a->lora);
  cmd->add_option("--cache", a->cache, "catalog cache file (created, validated, rebuilt when stale)");
  cmd->add_option("--tool-choice", a->in.tool_choice, "auto (default), required, none, or a function name");
  cmd->add_option("--system", a->in.system, "developer message (default: FunctionGemma's preamble)");
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json or directory (default: beside the model / in the GGUF)");
  AddThreadsOption(cmd, &a->threads, "threads (default: all cores)");
  cmd->add_option("--repeat", a->repeat, "run the request N times (the first pays for the catalog prefix)");
  cmd->add_flag("--no-restricted-head", a->no_restricted_head, "always compute the full LM head (for comparison)");
  cmd->add_flag("--no-jump-forward", a->no_jump_forward, "evaluate forced tokens one by one (for comparison)");
  cmd->add_flag("--no-draft", a->no_draft,
                "no speculative drafts: one pass per chosen token (for comparison; the output is the same)");
  cmd->add_flag("--no-prompt-reuse", a->no_prompt_reuse,
                "with --repeat: restore the whole catalog state and evaluate the whole turn every time, instead "
                "of keeping the positions a request shares with the previous one (for comparison; the output is the same)");
  cmd->add_flag("--trust-content-tokens", a->trust_content_tokens,
                "let control-token text in the utterance, system message and tools become control tokens, as "
                "Hugging Face does (default: off, content is text)");
  cmd->add_option("--follow", a->follow,
                  "timing aid for random-weight models: write this output (e.g. the call a real checkpoint "
                  "gives) instead of the argmax, with the same model and head work per step");
  cmd->add_option("utterance", a->in.utterance, "what the user said")->required();
  return [a] { return RunCall(*a); };
});

}  // namespace
}  // namespace fgemma::cli
