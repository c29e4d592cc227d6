// C API: model loading, tokenizer and chat-template rendering.
#include "capi/capi_internal.h"
#include "chat/request.h"

namespace fgemma::capi {

void RetainModel(const fgemma_model* model) { model->references.fetch_add(1); }

void ReleaseModel(const fgemma_model* model) {
  if (model->references.fetch_sub(1) == 1) delete model;
}

}  // namespace fgemma::capi

using namespace fgemma::capi;

extern "C" {

FGEMMA_API fgemma_model_params fgemma_model_default_params(void) {
  fgemma_model_params p;
  p.tokenizer_path = nullptr;
  return p;
}

FGEMMA_API fgemma_status fgemma_model_load(const char* path, fgemma_model_params params, fgemma_model** out) {
  return Guard([&]() -> fgemma_status {
    if (!out) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_model_load: out is NULL");
    *out = nullptr;
    if (!path) return Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_model_load: path is NULL");
    fgemma::LoadOptions options;
    if (params.tokenizer_path) options.tokenizer_path = params.tokenizer_path;
    auto engine = fgemma::Engine::Load(path, options);
    if (!engine.ok()) return Fail(engine.status());
    auto handle = std::make_unique<fgemma_model>();
    handle->engine = std::move(engine).value();
    handle->loaded = &handle->engine->loaded();
    *out = handle.release();
    return FGEMMA_OK;
  });
}

FGEMMA_API void fgemma_model_free(fgemma_model* model) {
  if (!Valid(model)) return;
  model->tag = kDeadTag;  // its own calls are refused from now on; its sessions and callers go on
  ReleaseModel(model);
}

FGEMMA_API int32_t fgemma_model_vocab_size(const fgemma_model* model) {
  return Valid(model) ? model->loaded->model->config().vocab_size : -1;
}

FGEMMA_API int32_t fgemma_model_bos(const fgemma_model* model) { return Valid(model) ? model->loaded->tokenizer.bos_id() : -1; }

FGEMMA_API bool fgemma_model_is_eos(const fgemma_model* model, int32_t token) {
  return Valid(model) && model->loaded->tokenizer.IsEos(token);
}

FGEMMA_API int64_t fgemma_tokenize(const fgemma_model* model, const char* text, size_t text_len, bool add_bos,
                                   bool parse_special, int32_t* tokens, size_t cap) {
  return GuardLength([&]() -> int64_t {
    if (!Valid(model)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_tokenize: invalid model handle");
    if (!text && text_len > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_tokenize: text is NULL");
    if (!tokens && cap > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_tokenize: tokens is NULL but cap > 0");
    fgemma::EncodeOptions eo;
    eo.add_bos = add_bos;
    eo.parse_special = parse_special;
    const auto ids = model->loaded->tokenizer.Encode(std::string_view(text ? text : "", text_len), eo);
    std::copy_n(ids.begin(), std::min(ids.size(), cap), tokens);
    return static_cast<int64_t>(ids.size());
  });
}

FGEMMA_API int64_t fgemma_detokenize(const fgemma_model* model, const int32_t* tokens, size_t n_tokens,
                                     bool skip_special, char* buf, size_t cap) {
  return GuardLength([&]() -> int64_t {
    if (!Valid(model)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_detokenize: invalid model handle");
    if (!tokens && n_tokens > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_detokenize: tokens is NULL");
    if (!buf && cap > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_detokenize: buf is NULL but cap > 0");
    fgemma::DecodeOptions dopt;
    dopt.skip_special = skip_special;
    auto text = model->loaded->tokenizer.Decode(std::span<const int32_t>(tokens, n_tokens), dopt);
    if (!text.ok()) return -Fail(text.status());
    return CopyOut(text.value(), buf, cap);
  });
}

FGEMMA_API int64_t fgemma_render(const fgemma_model* model, const char* request_json, char* buf, size_t cap) {
  return GuardLength([&]() -> int64_t {
    if (!Valid(model)) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_render: invalid model handle");
    if (!request_json) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_render: request_json is NULL");
    if (!buf && cap > 0) return -Fail(FGEMMA_ERR_INVALID_ARGUMENT, "fgemma_render: buf is NULL but cap > 0");
    auto request = fgemma::ParseChatRequestText(request_json, "request");
    if (!request.ok()) return -Fail(request.status());
    fgemma::RenderOptions ro;
    ro.template_kind = model->loaded->chat_template.kind;
    ro.add_generation_prompt = request->add_generation_prompt;  // as `fgemma render` does
    auto prompt = fgemma::RenderPrompt(request.value(), ro);
    if (!prompt.ok()) return -Fail(prompt.status());
    return CopyOut(prompt.value(), buf, cap);
  });
}

}  // extern "C"
