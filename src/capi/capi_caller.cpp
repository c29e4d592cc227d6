// C API: the function caller (tools + messages -> validated calls), with per-token streaming,
// cancellation from any thread, and time/token budgets (the call request's limits, enforced by
// FunctionCaller).
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>

#include "capi/capi_internal.h"
#include "chat/chat_json.h"
#include "chat/request.h"
#include "util/run_limits.h"
#include "util/thread_pool.h"

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

// A catalog prefill joins a shared pass in chunks of this many rows (the others wait one chunk).
constexpr size_t kSharedPassRows = 64;

// share_passes: the pass batcher (and adapter) of the model's live group with these params, or a
// new group's.
fgemma::Status JoinPassGroup(const fgemma_model* model, const fgemma_caller_params& params,
                             fgemma::FunctionCallerOptions& fo) {
  const int threads = params.n_threads > 0 ? params.n_threads : fgemma::ThreadPool::DefaultThreads();
  const std::string lora_path = params.lora_path ? params.lora_path : "";
  const float lora_scale = lora_path.empty() ? 1.0f : params.lora_scale;
  std::lock_guard<std::mutex> lock(model->groups_mu);
  std::erase_if(model->groups, [](const fgemma_model::PassGroup& g) { return g.batcher.expired(); });
  for (const fgemma_model::PassGroup& g : model->groups) {
    if (g.threads != threads || g.context != params.n_ctx || g.lora_path != lora_path || g.lora_scale != lora_scale)
      continue;
    std::shared_ptr<fgemma::PassBatcher> batcher = g.batcher.lock();
    std::shared_ptr<const fgemma::LoraAdapter> lora = g.lora.lock();
    if (!batcher || (!lora_path.empty() && !lora)) continue;
    fo.batcher = std::move(batcher);
    fo.lora = std::move(lora);
    return fgemma::Status();
  }
  FGEMMA_TRY(std::shared_ptr<const fgemma::LoraAdapter> lora,
             LoadLora(params.lora_path, params.lora_scale, *model->loaded->model));
  FGEMMA_TRY(std::shared_ptr<fgemma::PassBatcher> batcher,
             fgemma::PassBatcher::Create(model->loaded->model, kSharedPassRows, params.n_ctx,
                                         fgemma::SharedThreadPool(threads), lora));
  model->groups.push_back({threads, params.n_ctx, lora_path, lora_scale, batcher, lora});
  fo.batcher = std::move(batcher);
  fo.lora = std::move(lora);
  return fgemma::Status();
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
    fgemma::FunctionCallerOptions fo;
    fo.threads = params.n_threads;
    fo.context = params.n_ctx;
    fo.cache_path = handle->cache_path;
    fo.decoding.restricted_head = params.restricted_head;
    fo.decoding.jump_forward = params.jump_forward;
    fo.decoding.draft = params.draft;
    fo.trust_content_tokens = params.trust_content_tokens;
    if (params.share_passes) {
      fgemma::Status joined = JoinPassGroup(model, params, fo);
      if (!joined.ok()) return Fail(joined);
    } else {
      auto lora = LoadLora(params.lora_path, params.lora_scale, *model->loaded->model);
      if (!lora.ok()) return Fail(lora.status());
      fo.lora = std::move(lora).value();
    }
    auto caller = fgemma::FunctionCaller::Create(*model->loaded, fo);
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
