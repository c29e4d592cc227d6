/* fgemma C API: FunctionGemma-270M on device, from C or any language with a C FFI.
 *
 * Conventions
 *  - ABI: FGEMMA_ABI_VERSION changes whenever a struct layout or signature here changes; compare
 *    it with fgemma_abi_version() at run time when loading the library dynamically.
 *  - Errors: calls return fgemma_status (0 = FGEMMA_OK). Calls that fill a buffer return an int64_t:
 *    a value >= 0 is the length needed (tokens, or bytes without the terminating NUL), a negative
 *    value is -fgemma_status. They write at most `cap` elements and, for text, always NUL-terminate
 *    when cap > 0; the output is complete when the return value is < cap (text) or <= cap (tokens).
 *    fgemma_last_error() holds the failing call's message for the calling thread.
 *  - Handles are opaque. NULL, freed or wrong-kind handles give FGEMMA_ERR_INVALID_ARGUMENT; nothing
 *    aborts or throws. Freeing NULL is a no-op.
 *  - Params structs are passed by value; start from fgemma_*_default_params() and change fields.
 *
 * Thread safety
 *  - An fgemma_model is immutable once loaded: any number of sessions and callers on any threads
 *    may share it. Each session and caller holds it: fgemma_model_free before them only ends the
 *    model handle's own use, and the memory is released with the last of them. No call on the
 *    model handle itself may run at the same time as, or after, its fgemma_model_free.
 *  - Numbers are checked (docs/limits.md): n_threads 0..256, time_budget_ms finite in 0..86400000,
 *    lora_scale finite with |scale| <= 1000, n_ctx at most the model's max_position_embeddings
 *    (a caller's at least 1; a session's 0 means the maximum); others
 *    fail with FGEMMA_ERR_INVALID_ARGUMENT or FGEMMA_ERR_OUT_OF_RANGE naming the field.
 *  - An fgemma_session or fgemma_caller is used by one thread at a time (no internal locking).
 *    The only exception is fgemma_caller_cancel(), which any thread may call at any time.
 *  - fgemma_last_error() is per thread; the pointer stays valid until the thread's next fgemma call.
 */
#ifndef FGEMMA_H_
#define FGEMMA_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(FGEMMA_BUILDING_LIBRARY)
#define FGEMMA_API __attribute__((visibility("default")))
#else
#define FGEMMA_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define FGEMMA_ABI_VERSION 4 /* 3: draft; lora_path / lora_scale in the session and caller params;
                                4: share_passes in the caller params */

typedef enum fgemma_status {
  FGEMMA_OK = 0,
  FGEMMA_ERR_INVALID_ARGUMENT = 1, /* NULL/invalid handle, malformed JSON, bad option */
  FGEMMA_ERR_NOT_FOUND = 2,        /* a file or key that must exist does not */
  FGEMMA_ERR_CORRUPT_FILE = 3,     /* a file contradicts its own format */
  FGEMMA_ERR_UNSUPPORTED = 4,      /* valid input fgemma does not handle */
  FGEMMA_ERR_OUT_OF_RANGE = 5,     /* a limit was exceeded (context length, ...) */
  FGEMMA_ERR_IO = 6,               /* the OS refused (open, mmap, write) */
  FGEMMA_ERR_OUT_OF_MEMORY = 7,
  FGEMMA_ERR_CANCELLED = 8,        /* fgemma_caller_cancel() or a callback returned non-zero */
  FGEMMA_ERR_INTERNAL = 9,
  FGEMMA_ERR_BUDGET = 10,          /* the time or token budget of the params ran out */
  /* Not a status: it makes every int32 a value of the type, so a code from a newer library or a
   * binding's raw integer reaches fgemma_status_name() defined ("unknown status") in C++ too. */
  FGEMMA_STATUS_FORCE_32BIT = 0x7FFFFFFF
} fgemma_status;

typedef struct fgemma_model fgemma_model;
typedef struct fgemma_session fgemma_session;
typedef struct fgemma_caller fgemma_caller;

/* Called for each generated token with its text (the bytes completed by this token; may be empty
 * while a UTF-8 sequence is incomplete; not NUL-terminated). Return non-zero to cancel. */
typedef int (*fgemma_token_callback)(int32_t token, const char* text, size_t text_len, void* user_data);

FGEMMA_API int32_t fgemma_abi_version(void);
FGEMMA_API const char* fgemma_version(void);
FGEMMA_API const char* fgemma_status_name(fgemma_status status);
/* Message of the last failing call on this thread ("" if none). */
FGEMMA_API const char* fgemma_last_error(void);

/* ---- Model: weights (memory-mapped), tokenizer and chat template ---- */

typedef struct fgemma_model_params {
  const char* tokenizer_path; /* NULL: beside the model / inside the GGUF */
} fgemma_model_params;

FGEMMA_API fgemma_model_params fgemma_model_default_params(void);
/* `path`: a Hugging Face directory, a .safetensors file (config.json beside it) or a .gguf file. */
FGEMMA_API fgemma_status fgemma_model_load(const char* path, fgemma_model_params params, fgemma_model** out);
FGEMMA_API void fgemma_model_free(fgemma_model* model);
FGEMMA_API int32_t fgemma_model_vocab_size(const fgemma_model* model); /* -1 on invalid handle */
FGEMMA_API int32_t fgemma_model_bos(const fgemma_model* model);
FGEMMA_API bool fgemma_model_is_eos(const fgemma_model* model, int32_t token);

/* Text -> token ids. parse_special: match control tokens written in the text (false for untrusted
 * text). Returns the number of tokens (written: at most cap). */
FGEMMA_API int64_t fgemma_tokenize(const fgemma_model* model, const char* text, size_t text_len, bool add_bos,
                                   bool parse_special, int32_t* tokens, size_t cap);
/* Token ids -> text. Returns the byte length without NUL. */
FGEMMA_API int64_t fgemma_detokenize(const fgemma_model* model, const int32_t* tokens, size_t n_tokens,
                                     bool skip_special, char* buf, size_t cap);
/* Renders a chat request ({"tools","messages","add_generation_prompt"?} or an OpenAI chat-completions
 * body) to prompt text with the model's chat template (including <bos>; the trailing
 * "<start_of_turn>model\n" unless add_generation_prompt is false). Returns the byte length without NUL. */
FGEMMA_API int64_t fgemma_render(const fgemma_model* model, const char* request_json, char* buf, size_t cap);

/* ---- Session: one sequence's KV cache, raw prefill/decode ---- */

typedef struct fgemma_session_params {
  uint32_t n_ctx;     /* positions (0: the model's maximum) */
  uint32_t n_batch;   /* tokens per prefill chunk */
  int32_t n_threads;  /* 0: all cores */
  /* A PEFT LoRA adapter directory (adapter_config.json + adapter_model.safetensors) applied at run
   * time over the model's weights (NULL: none; "" is refused); read when the session is made. lora_scale
   * multiplies its update (default 1). A malformed adapter fails with FGEMMA_ERR_UNSUPPORTED
   * (DoRA, modules_to_save, embedding/head adapters, biases, unknown modules),
   * FGEMMA_ERR_INVALID_ARGUMENT (missing fields, rank 0, shapes that do not match the model),
   * FGEMMA_ERR_NOT_FOUND (missing files) or FGEMMA_ERR_CORRUPT_FILE; the message names it. */
  const char* lora_path;
  float lora_scale;
} fgemma_session_params;

FGEMMA_API fgemma_session_params fgemma_session_default_params(void);
FGEMMA_API fgemma_status fgemma_session_new(const fgemma_model* model, fgemma_session_params params,
                                            fgemma_session** out);
FGEMMA_API void fgemma_session_free(fgemma_session* session);
FGEMMA_API fgemma_status fgemma_session_reset(fgemma_session* session);
FGEMMA_API int64_t fgemma_session_position(const fgemma_session* session);
/* Appends tokens at the current position. For the last token, writes the full-vocabulary logits to
 * `logits` when non-NULL (logits_cap must be >= vocab size) and its argmax to `argmax` when non-NULL. */
FGEMMA_API fgemma_status fgemma_session_eval(fgemma_session* session, const int32_t* tokens, size_t n_tokens,
                                             float* logits, size_t logits_cap, int32_t* argmax);
/* Greedy: evaluates `prompt` (at least one token), then decodes up to max_new tokens, stopping
 * at an EOS token when stop_at_eos. Generated ids go to out_tokens (at most out_cap; *n_out gets the
 * count generated, may exceed out_cap). `callback` may be NULL. */
FGEMMA_API fgemma_status fgemma_session_generate(fgemma_session* session, const int32_t* prompt, size_t n_prompt,
                                                 size_t max_new, bool stop_at_eos, int32_t* out_tokens,
                                                 size_t out_cap, size_t* n_out, fgemma_token_callback callback,
                                                 void* user_data);

/* ---- Caller: the function-calling engine (constrained decoding + catalog prefix cache) ---- */

typedef struct fgemma_caller_params {
  const char* cache_path;   /* catalog cache file (NULL: memory only); copied */
  uint32_t n_ctx;           /* positions (default 4096) */
  int32_t n_threads;        /* 0: all cores */
  /* Generated tokens per call, at most n_ctx (a call with more is refused); reaching it ends the
   * call with FGEMMA_ERR_BUDGET. 0: the default budget, 1024 tokens (fewer when n_ctx is smaller);
   * a call stopped there is not an error: its result (finish_reason "length") says so. The
   * grammar's bounds usually end a call long before either. */
  uint32_t max_tokens;
  double time_budget_ms;    /* wall-clock budget per call, checked per token (0: none) */
  bool restricted_head;     /* exact speed-ups (default true); off only for comparison */
  bool jump_forward;
  /* false (default): control tokens in the prompt come only from the chat template; text such as
   * "<end_of_turn>" or "<escape>" in messages, tool names, descriptions, enum values or arguments
   * is encoded as ordinary text. true: the plain Hugging Face behaviour (the rendered prompt
   * tokenized as one string with control-token recognition on), for content you fully trust. */
  bool trust_content_tokens;
  /* Exact speculative drafts (default true; ABI version 3 added this field): guessed tokens
   * (copied from the conversation and this caller's earlier calls on the catalog) are verified in
   * the pass that computes the next token, so a call takes fewer passes; the output is the same
   * token for token. false only for comparisons. */
  bool draft;
  /* A LoRA adapter both of the caller's sessions run with, as in fgemma_session_params (NULL:
   * none); the catalog state and cache file are bound to it (a cache file made without it or with
   * another adapter or scale is rebuilt). */
  const char* lora_path;
  float lora_scale;
  /* Continuous batching between callers (ABI version 4 added this field; default false): callers
   * made from one model with share_passes set and the same n_ctx, n_threads, lora_path and
   * lora_scale share forward passes while they call at the same time from different threads: one
   * read of the weights serves each one's next tokens (a long catalog prefill joins in chunks of
   * 64 rows, so it holds the others back by one chunk at most). Answers are the same, token for
   * token, as each caller's alone. Such a group keeps one set of batch buffers, made with its
   * first caller and freed with its last (an adapter is loaded once per model and spec, for every
   * caller and session running it, and freed with the last of them). For apps that call from several
   * threads at once; a single caller gains nothing. */
  bool share_passes;
} fgemma_caller_params;

FGEMMA_API fgemma_caller_params fgemma_caller_default_params(void);
FGEMMA_API fgemma_status fgemma_caller_new(const fgemma_model* model, fgemma_caller_params params,
                                           fgemma_caller** out);
FGEMMA_API void fgemma_caller_free(fgemma_caller* caller);
/* tools_json: array of {"type":"function","function":{...}}; messages_json: array of messages;
 * tool_choice: "auto" (NULL), "required", "none", a function name, or an OpenAI tool_choice object as
 * JSON text. On FGEMMA_OK the outcome (the JSON `fgemma call` prints: "calls", "text", "timing" and
 * "finish_reason": "tool_calls", "stop" for text only, or "length" when the grammar's or the
 * generator's own token cap cut it; an invalid model output is reported in its "error" member, not
 * as a failure) is read with fgemma_caller_result_json(). */
FGEMMA_API fgemma_status fgemma_caller_call(fgemma_caller* caller, const char* tools_json, const char* messages_json,
                                            const char* tool_choice, fgemma_token_callback callback,
                                            void* user_data);
/* The same from an OpenAI chat-completions body (its tools, messages and tool_choice). */
FGEMMA_API fgemma_status fgemma_caller_call_openai(fgemma_caller* caller, const char* body_json,
                                                   fgemma_token_callback callback, void* user_data);
/* Token ids of the prompt of the last call that ran (also one stopped by a budget or cancel;
 * none after a call that failed before running): <bos>, catalog, messages. Returns the count. */
FGEMMA_API int64_t fgemma_caller_prompt_tokens(const fgemma_caller* caller, int32_t* tokens, size_t cap);
/* JSON of the last successful call. Returns the byte length without NUL. */
FGEMMA_API int64_t fgemma_caller_result_json(const fgemma_caller* caller, char* buf, size_t cap);
/* Thread-safe. Cancels the call in progress (at its next token) or, if none, the next call; the call
 * it cancels returns FGEMMA_ERR_CANCELLED and clears the request. */
FGEMMA_API fgemma_status fgemma_caller_cancel(fgemma_caller* caller);

/* The kernels chosen at run time for this CPU ("AVX3_DL", "AVX2", "NEON", "NEON_DOTPROD", ...). */
FGEMMA_API const char* fgemma_kernel_target(void);

#ifdef __cplusplus
}
#endif

#endif /* FGEMMA_H_ */
