// C API: the function caller (tools + messages -> validated calls), with per-token streaming,
// cancellation from any thread, and time/token budgets (the call request's limits, enforced by
// FunctionCaller).
#include <algorithm>
#include <chrono>
#include <string>

#include "capi/capi_internal.h"
#include "chat/chat_json.h"
#include "chat/request.h"
#include "util/run_limits.h"

using namespace fgemma::capi;

namespace {

// Parses the C tool_choice argument: NULL = auto, JSON object text, or a plain word/function name.
fgemma::Result<fgemma::ToolChoice> ParseToolChoiceArg(const char* text, const std::vector<fgemma::Tool>& tools) {
  if (!text) return fgemma::ToolChoice{};
  std::string_view v(text);
  if (!v.empty() && (v.front() == '{' || v.front() == '"')) {
    fgemma::OrderedJson j = fgemma::OrderedJson::parse(v, nullptr, false);
    if (j.is_discarded()) return fgemma::InvalidArgument("tool_choice: malformed JSON");
    return fgemma::ParseToolChoice(j, tools);
  }
  return fgemma::ParseToolChoice(fgemma::Json(std::string(v)), tools);
}

// Translates the caller's params into the request's limits, runs it, and maps the outcome back:
// a stop by cancel or callback is FGEMMA_ERR_CANCELLED, one by max_tokens or time_budget_ms
// FGEMMA_ERR_BUDGET.
fgemma_status RunCall(fgemma_caller* c, fgemma::CallRequest request, fgemma_token_callback callback, void* user_data) {
  c->result_json.clear();
  c->prompt_tokens.clear();
  request.limits.max_tokens = c->params.max_tokens;
  request.limits.cancel = &c->cancel;
  if (c->params.time_budget_ms > 0)
    request.limits.deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double, std::milli>(c->params.time_budget_ms));
  fgemma::StreamDecoder decoder(c->owner->loaded->tokenizer);
  fgemma::Status decode_error;
  bool callback_stopped = false;
  if (callback) {
    request.on_token = [&](int32_t id) -> bool {
      auto piece = decoder.Push(id);
      if (!piece.ok()) {
        decode_error = piece.status();
        return false;
      }
      callback_stopped = callback(id, piece->data(), piece->size(), user_data) != 0;
      return !callback_stopped;
    };
  }
  auto outcome = c->caller->Call(request);
  c->caller->TakeWarnings();
  if (!decode_error.ok()) return Fail(decode_error);
  if (!outcome.ok()) return Fail(outcome.status());
  c->prompt_tokens = outcome->prompt_tokens;  // kept for calls stopped by a limit too
  switch (outcome->finish_reason) {
    case fgemma::FinishReason::kCancelled:
      // The cancel is consumed by the call it stopped; one that came after the call ended applies
      // to the next call.
      if (!callback_stopped) c->cancel.store(false);
      return Fail(FGEMMA_ERR_CANCELLED, "call cancelled");
    case fgemma::FinishReason::kDeadline:
      return Fail(FGEMMA_ERR_BUDGET, "call budget exhausted (max_tokens " + std::to_string(c->params.max_tokens) +
                                         ", time_budget_ms " + std::to_string(c->params.time_budget_ms) + ")");
    case fgemma::FinishReason::kLength:
      // Without max_tokens the cap is the grammar's bounds and the generator's own: the outcome
      // (with its error) is the result, as for any output that does not validate.
      if (c->params.max_tokens)
        return Fail(FGEMMA_ERR_BUDGET, "call budget exhausted (max_tokens " + std::to_string(c->params.max_tokens) +
                                           ", time_budget_ms " + std::to_string(c->params.time_budget_ms) + ")");
      break;
    default:
      break;
  }
  c->result_json = fgemma::CallOutcomeToJson(outcome.value()).dump();
  return FGEMMA_OK;
}

// A catalog prefill joins a shared pass in chunks of this many rows (the others wait one chunk):
// fewer than the server's kSharedPassRows, for the latency of an app's other callers
// (docs/c-cpp.md).
constexpr size_t kCapiPassRows = 64;

// The params as the engine's config (the checks of fgemma_caller_new done).
fgemma::Result<fgemma::EngineConfig> ConfigOf(const fgemma_caller_params& params, const std::string& cache_path) {
  fgemma::EngineConfig c;
  c.threads = params.n_threads;
  c.context = params.n_ctx;
  c.cache_path = cache_path;
  c.decoding.restricted_head = params.restricted_head;
  c.decoding.jump_forward = params.jump_forward;
  c.decoding.draft = params.draft;
  c.trust_content_tokens = params.trust_content_tokens;
  FGEMMA_TRY(c.lora, LoraSpecOf(params.lora_path, params.lora_scale, "fgemma_caller_new"));
  c.share_passes = params.share_passes;
  c.pass_rows = kCapiPassRows;
  // params.max_tokens is each call's own limit (RunCall): refused per call beyond n_ctx, and a stop
  // there is FGEMMA_ERR_BUDGET; 0 leaves the caller's default budget (ResolveMaxTokens).
  return c;
}

}  // namespace

extern "C" {

FGEMMA_API fgemma_caller_params fgemma_caller_default_params(void) {
  fgemma_caller_params p;
  p.cache_path = nullptr;
  p.n_ctx = 4096;
  p.n_threads = 0;
  p.max_tokens = 0;
  p.time_budget_ms = 0;
  p.restricted_head = true;
  p.jump_forward = true;
  p.trust_content_tokens = false;
  p.draft = true;
  p.lora_path = nullptr;
  p.lora_scale = 1.0f;
  p.share_passes = false;
  return p;
}

FGEMMA_API fgemma_status fgemma_caller_new(const fgemma_model* model, fgemma_caller_params params,
                                           fgemma_caller** out) {
  return Guard([&]() -> fgemma_status {
    if (!out) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_new: out is NULL");
    *out = nullptr;
    if (!Valid(model)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_new: invalid model handle");
    if (params.n_ctx == 0) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_new: n_ctx is 0 (at least 1 position)");
    for (const fgemma::Status& st : {fgemma::CheckThreadCount(params.n_threads, "fgemma_caller_new: n_threads"),
                                     fgemma::CheckTimeBudgetMs(params.time_budget_ms, "fgemma_caller_new: time_budget_ms")})
      if (!st.ok()) return Fail(st);
    auto handle = std::make_unique<fgemma_caller>();
    handle->owner = model;
    handle->params = params;
    handle->cache_path = params.cache_path ? params.cache_path : "";
    handle->params.cache_path = nullptr;  // the copy above owns it
    handle->params.lora_path = nullptr;   // read below; the caller keeps the adapter
    auto config = ConfigOf(params, handle->cache_path);
    if (!config.ok()) return Fail(config.status());
    auto caller = model->engine->NewCaller(config.value());
    if (!caller.ok()) return Fail(caller.status());
    handle->caller = std::move(caller).value();
    RetainModel(model);
    *out = handle.release();
    return FGEMMA_OK;
  });
}

FGEMMA_API void fgemma_caller_free(fgemma_caller* caller) {
  if (!Valid(caller)) return;
  caller->tag = kDeadTag;
  const fgemma_model* owner = caller->owner;
  delete caller;
  ReleaseModel(owner);
}

FGEMMA_API fgemma_status fgemma_caller_call(fgemma_caller* caller, const char* tools_json, const char* messages_json,
                                            const char* tool_choice, fgemma_token_callback callback,
                                            void* user_data) {
  return Guard([&]() -> fgemma_status {
    if (!Valid(caller)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_call: invalid caller handle");
    caller->prompt_tokens.clear();  // a request refused before it runs has no prompt
    if (!tools_json || !messages_json)
      return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_call: tools_json and messages_json are required");
    auto tools = fgemma::ParseOrderedJson(tools_json, "tools");
    if (!tools.ok()) return Fail(tools.status());
    auto messages = fgemma::ParseOrderedJson(messages_json, "messages");
    if (!messages.ok()) return Fail(messages.status());
    fgemma::OrderedJson body;
    body["tools"] = std::move(tools).value();
    body["messages"] = std::move(messages).value();
    auto request = fgemma::ParseChatRequest(body, fgemma::RequestFormat::kTemplateInput);
    if (!request.ok()) return Fail(request.status());
    auto choice = ParseToolChoiceArg(tool_choice, request->tools);
    if (!choice.ok()) return Fail(choice.status());
    return RunCall(caller, fgemma::CallRequest{.chat = std::move(request).value(), .tool_choice = choice.value()}, callback, user_data);
  });
}

FGEMMA_API fgemma_status fgemma_caller_call_openai(fgemma_caller* caller, const char* body_json,
                                                   fgemma_token_callback callback, void* user_data) {
  return Guard([&]() -> fgemma_status {
    if (!Valid(caller)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_call_openai: invalid caller handle");
    caller->prompt_tokens.clear();  // a request refused before it runs has no prompt
    if (!body_json) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_call_openai: body_json is NULL");
    auto body = fgemma::ParseOrderedJson(body_json, "request body");
    if (!body.ok()) return Fail(body.status());
    auto request = fgemma::ParseChatRequest(body.value(), fgemma::RequestFormat::kOpenAI);
    if (!request.ok()) return Fail(request.status());
    auto choice = fgemma::ToolChoiceOfBody(body.value(), request->tools);
    if (!choice.ok()) return Fail(choice.status());
    return RunCall(caller, fgemma::CallRequest{.chat = std::move(request).value(), .tool_choice = choice.value()}, callback, user_data);
  });
}

FGEMMA_API int64_t fgemma_caller_prompt_tokens(const fgemma_caller* caller, int32_t* tokens, size_t cap) {
  return GuardLength([&]() -> int64_t {
    if (!Valid(caller)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_prompt_tokens: invalid caller handle");
    if (!tokens && cap > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_prompt_tokens: tokens is NULL but cap > 0");
    const auto& ids = caller->prompt_tokens;
    std::copy_n(ids.begin(), std::min(cap, ids.size()), tokens);
    return static_cast<int64_t>(ids.size());
  });
}

FGEMMA_API int64_t fgemma_caller_result_json(const fgemma_caller* caller, char* buf, size_t cap) {
  return GuardLength([&]() -> int64_t {
    if (!Valid(caller)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_result_json: invalid caller handle");
    if (!buf && cap > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_result_json: buf is NULL but cap > 0");
    return CopyOut(caller->result_json, buf, cap);
  });
}

FGEMMA_API fgemma_status fgemma_caller_cancel(fgemma_caller* caller) {
  if (!Valid(caller)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_caller_cancel: invalid caller handle");
  caller->cancel.store(true);
  return FGEMMA_OK;
}

}  // extern "C"
