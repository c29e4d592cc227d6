// C API: sessions (raw prefill, logits, greedy decoding with a streaming callback).
#include <vector>

#include "capi/capi_internal.h"
#include "util/run_limits.h"

using namespace fgemma::capi;

extern "C" {

FGEMMA_API fgemma_session_params fgemma_session_default_params(void) {
  fgemma_session_params p;
  p.n_ctx = 0;
  p.n_batch = 256;
  p.n_threads = 0;
  p.lora_path = nullptr;
  p.lora_scale = 1.0f;
  return p;
}

FGEMMA_API fgemma_status fgemma_session_new(const fgemma_model* model, fgemma_session_params params,
                                            fgemma_session** out) {
  return Guard([&]() -> fgemma_status {
    if (!out) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_new: out is NULL");
    *out = nullptr;
    if (!Valid(model)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_new: invalid model handle");
    if (fgemma::Status st = fgemma::CheckThreadCount(params.n_threads, "fgemma_session_new: n_threads"); !st.ok())
      return Fail(st);
    fgemma::SessionOptions so;
    so.context = params.n_ctx;
    so.max_batch = params.n_batch ? params.n_batch : 256;
    so.threads = params.n_threads;
    auto spec = LoraSpecOf(params.lora_path, params.lora_scale, "fgemma_session_new");
    if (!spec.ok()) return Fail(spec.status());
    auto lora = model->engine->Adapter(spec.value());
    if (!lora.ok()) return Fail(lora.status());
    so.lora = std::move(lora).value();
    auto session = fgemma::Session::Create(model->loaded->model, so);
    if (!session.ok()) return Fail(session.status());
    auto handle = std::make_unique<fgemma_session>();
    handle->owner = model;
    handle->session = std::move(session).value();
    RetainModel(model);
    *out = handle.release();
    return FGEMMA_OK;
  });
}

FGEMMA_API void fgemma_session_free(fgemma_session* session) {
  if (!Valid(session)) return;
  session->tag = kDeadTag;
  const fgemma_model* owner = session->owner;
  delete session;
  ReleaseModel(owner);
}

FGEMMA_API fgemma_status fgemma_session_reset(fgemma_session* session) {
  if (!Valid(session)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_reset: invalid session handle");
  session->session->Reset();
  return FGEMMA_OK;
}

FGEMMA_API int64_t fgemma_session_position(const fgemma_session* session) {
  if (!Valid(session)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_position: invalid session handle");
  return static_cast<int64_t>(session->session->position());
}

FGEMMA_API fgemma_status fgemma_session_eval(fgemma_session* session, const int32_t* tokens, size_t n_tokens,
                                             float* logits, size_t logits_cap, int32_t* argmax) {
  return Guard([&]() -> fgemma_status {
    if (!Valid(session)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_eval: invalid session handle");
    if (!tokens || n_tokens == 0) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_eval: no tokens");
    const auto vocab = static_cast<size_t>(session->owner->loaded->model->config().vocab_size);
    if (logits && logits_cap < vocab)
      return Fail(FGEMMA_ERR_OUT_OF_RANGE, "fgemma_session_eval: logits_cap " + std::to_string(logits_cap) +
                                               " is below the vocabulary size " + std::to_string(vocab));
    const std::span<const int32_t> ids(tokens, n_tokens);
    if (!logits && !argmax) {
      fgemma::Status st = session->session->Evaluate(ids);
      return st.ok() ? FGEMMA_OK : Fail(st);
    }
    fgemma::HeadRequest head;
    head.index = n_tokens - 1;
    head.logits = logits;
    fgemma::Status st = session->session->Evaluate(ids, std::span<fgemma::HeadRequest>(&head, 1));
    if (!st.ok()) return Fail(st);
    if (argmax) *argmax = head.argmax;
    return FGEMMA_OK;
  });
}

FGEMMA_API fgemma_status fgemma_session_generate(fgemma_session* session, const int32_t* prompt, size_t n_prompt,
                                                 size_t max_new, bool stop_at_eos, int32_t* out_tokens,
                                                 size_t out_cap, size_t* n_out, fgemma_token_callback callback,
                                                 void* user_data) {
  return Guard([&]() -> fgemma_status {
    if (n_out) *n_out = 0;
    if (!Valid(session)) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_generate: invalid session handle");
    if (!prompt || n_prompt == 0) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_generate: empty prompt");
    if (!out_tokens && out_cap > 0)
      return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_session_generate: out_tokens is NULL but out_cap > 0");
    fgemma::StreamDecoder decoder(session->owner->loaded->tokenizer);
    size_t count = 0;
    bool cancelled = false;
    fgemma::Status decode_error;
    fgemma::Status st = session->session->Generate(
        std::span<const int32_t>(prompt, n_prompt), max_new, stop_at_eos, [&](int32_t id) {
          if (count < out_cap) out_tokens[count] = id;
          ++count;
          if (!callback) return true;
          auto piece = decoder.Push(id);
          if (!piece.ok()) {
            decode_error = piece.status();
            return false;
          }
          if (callback(id, piece->data(), piece->size(), user_data) != 0) {
            cancelled = true;
            return false;
          }
          return true;
        });
    if (n_out) *n_out = count;
    if (!st.ok()) return Fail(st);
    if (!decode_error.ok()) return Fail(decode_error);
    if (cancelled) return Fail(FGEMMA_ERR_CANCELLED, "generation cancelled by the callback");
    return FGEMMA_OK;
  });
}

}  // extern "C"
