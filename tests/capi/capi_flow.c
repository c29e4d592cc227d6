/* The whole C API flow, compiled as C11 against fgemma.h only:
 * fgemma_capi_flow FIXTURES_DIR TMP_DIR. Exits non-zero on the first failed check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgemma/fgemma.h"

static int g_failures = 0;
#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, fgemma_last_error());                                              \
      ++g_failures;                                                                     \
    }                                                                                   \
  } while (0)

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  char* data;
  long size;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc((size_t)size + 1);
  if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    data = NULL;
  }
  if (data) data[size] = '\0';
  fclose(f);
  return data;
}

/* Sized query, then the real call: the llama.h two-step. */
static char* caller_result(const fgemma_caller* c) {
  int64_t n = fgemma_caller_result_json(c, NULL, 0);
  char* buf;
  if (n < 0) return NULL;
  buf = malloc((size_t)n + 1);
  if (fgemma_caller_result_json(c, buf, (size_t)n + 1) != n) {
    free(buf);
    return NULL;
  }
  return buf;
}

typedef struct stream_state {
  int tokens;
  int cancel_after; /* 0: never */
  size_t text_bytes;
} stream_state;

static int on_token(int32_t token, const char* text, size_t len, void* user) {
  stream_state* s = (stream_state*)user;
  (void)token;
  (void)text;
  s->tokens++;
  s->text_bytes += len;
  return s->cancel_after > 0 && s->tokens >= s->cancel_after;
}

static const char* kMessages =
    "[{\"role\":\"developer\",\"content\":\"You are a model that can do function calling with the following "
    "functions\"},{\"role\":\"user\",\"content\":\"Turn on the kitchen lights\"}]";

static void check_invalid_handles(fgemma_model* model, fgemma_session* session) {
  fgemma_model* m = NULL;
  fgemma_session* s = NULL;
  fgemma_caller* c = NULL;
  int32_t tok[4];
  char buf[16];
  size_t n = 0;
  CHECK(fgemma_model_load(NULL, fgemma_model_default_params(), &m) == FGEMMA_ERR_INVALID_ARGUMENT && m == NULL);
  CHECK(strlen(fgemma_last_error()) > 0);
  CHECK(fgemma_model_load("/nonexistent/model", fgemma_model_default_params(), NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_model_load("/nonexistent/model", fgemma_model_default_params(), &m) != FGEMMA_OK && m == NULL);
  CHECK(fgemma_tokenize(NULL, "a", 1, false, false, tok, 4) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_tokenize(model, NULL, 3, false, false, tok, 4) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_detokenize(NULL, tok, 1, false, buf, sizeof buf) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_render(model, "{not json", buf, sizeof buf) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_render(model, NULL, buf, sizeof buf) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_session_new(NULL, fgemma_session_default_params(), &s) == FGEMMA_ERR_INVALID_ARGUMENT && s == NULL);
  CHECK(fgemma_session_eval(NULL, tok, 1, NULL, 0, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_session_generate(NULL, tok, 1, 1, true, NULL, 0, &n, NULL, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_session_reset(NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_session_position(NULL) < 0);
  CHECK(fgemma_caller_new(NULL, fgemma_caller_default_params(), &c) == FGEMMA_ERR_INVALID_ARGUMENT && c == NULL);
  CHECK(fgemma_caller_call(NULL, "[]", "[]", NULL, NULL, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_caller_call_openai(NULL, "{}", NULL, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_caller_result_json(NULL, buf, sizeof buf) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_caller_cancel(NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_model_vocab_size(NULL) == -1);
  /* A handle of the wrong kind is refused, not used. */
  CHECK(fgemma_tokenize((const fgemma_model*)session, "a", 1, false, false, tok, 4) == -FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_caller_cancel((fgemma_caller*)model) == FGEMMA_ERR_INVALID_ARGUMENT);
  fgemma_model_free(NULL);
  fgemma_session_free(NULL);
  fgemma_caller_free(NULL);
}

static void check_tokenizer(const fgemma_model* model) {
  const char* text = "Hello world, turn on the lights";
  int64_t n = fgemma_tokenize(model, text, strlen(text), false, false, NULL, 0);
  int32_t* ids;
  int64_t len;
  char* back;
  char small[4];
  CHECK(n > 0);
  if (n <= 0) return;
  ids = malloc(sizeof(int32_t) * (size_t)n);
  CHECK(fgemma_tokenize(model, text, strlen(text), false, false, ids, (size_t)n) == n);
  len = fgemma_detokenize(model, ids, (size_t)n, false, NULL, 0);
  CHECK(len == (int64_t)strlen(text));
  back = malloc((size_t)len + 1);
  CHECK(fgemma_detokenize(model, ids, (size_t)n, false, back, (size_t)len + 1) == len);
  CHECK(strcmp(back, text) == 0);
  /* A short buffer is truncated and NUL-terminated; the return value still says what is needed. */
  CHECK(fgemma_detokenize(model, ids, (size_t)n, false, small, sizeof small) == len);
  CHECK(strlen(small) == sizeof small - 1 && strncmp(small, text, 3) == 0);
  free(back);
  free(ids);
}

static void check_session(const fgemma_model* model, const char* tools) {
  size_t req_len = strlen(tools) + strlen(kMessages) + 64;
  char* request = malloc(req_len);
  int64_t plen, ntok;
  char* prompt;
  int32_t* ids;
  float* logits;
  int32_t vocab = fgemma_model_vocab_size(model), argmax = -1, best = 0, i;
  int32_t out[8];
  size_t n_out = 0;
  fgemma_session* s = NULL;
  fgemma_session_params sp = fgemma_session_default_params();
  stream_state st = {0, 0, 0};

  snprintf(request, req_len, "{\"tools\":%s,\"messages\":%s}", tools, kMessages);
  plen = fgemma_render(model, request, NULL, 0);
  CHECK(plen > 0);
  prompt = malloc((size_t)plen + 1);
  CHECK(fgemma_render(model, request, prompt, (size_t)plen + 1) == plen);
  CHECK(strncmp(prompt, "<bos>", 5) == 0);
  CHECK(strstr(prompt, "set_lights") != NULL);
  ntok = fgemma_tokenize(model, prompt, (size_t)plen, false, true, NULL, 0);
  ids = malloc(sizeof(int32_t) * (size_t)ntok);
  fgemma_tokenize(model, prompt, (size_t)plen, false, true, ids, (size_t)ntok);
  CHECK(ids[0] == fgemma_model_bos(model));

  sp.n_ctx = 2048;
  sp.n_threads = 2;
  CHECK(fgemma_session_new(model, sp, &s) == FGEMMA_OK);
  logits = malloc(sizeof(float) * (size_t)vocab);
  CHECK(fgemma_session_eval(s, ids, (size_t)ntok, logits, 10, &argmax) == FGEMMA_ERR_OUT_OF_RANGE);
  CHECK(fgemma_session_eval(s, ids, (size_t)ntok, logits, (size_t)vocab, &argmax) == FGEMMA_OK);
  CHECK(fgemma_session_position(s) == ntok);
  for (i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  CHECK(argmax == best);

  /* Greedy decoding from the same prompt continues with the argmax, streaming each token. */
  CHECK(fgemma_session_reset(s) == FGEMMA_OK);
  CHECK(fgemma_session_generate(s, ids, (size_t)ntok, 8, false, out, 8, &n_out, on_token, &st) == FGEMMA_OK);
  CHECK(n_out == 8 && st.tokens == 8 && out[0] == best);
  /* A callback returning non-zero cancels. */
  CHECK(fgemma_session_reset(s) == FGEMMA_OK);
  st.tokens = 0;
  st.cancel_after = 2;
  CHECK(fgemma_session_generate(s, ids, (size_t)ntok, 8, false, out, 8, &n_out, on_token, &st) ==
        FGEMMA_ERR_CANCELLED);
  CHECK(n_out == 2);
  fgemma_session_free(s);
  free(logits);
  free(ids);
  free(prompt);
  free(request);
}

static void check_caller(const fgemma_model* model, const char* tools, const char* cache_path) {
  fgemma_caller_params cp = fgemma_caller_default_params();
  fgemma_caller *c = NULL, *c2 = NULL;
  char *first, *second, *cut;
  stream_state st = {0, 0, 0};
  char openai[8192];

  remove(cache_path);
  cp.cache_path = cache_path;
  cp.n_ctx = 2048;
  cp.n_threads = 2;
  CHECK(fgemma_caller_new(model, cp, &c) == FGEMMA_OK);
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", on_token, &st) == FGEMMA_OK);
  first = caller_result(c);
  CHECK(first && strstr(first, "\"calls\":[{\"arguments\":") && strstr(first, "\"cache\":\"built\""));
  CHECK(first && !strstr(first, "\"error\""));
  CHECK(st.tokens > 0 && st.text_bytes > 0);
  /* A second caller restores the catalog from the cache file and answers the same. */
  CHECK(fgemma_caller_new(model, cp, &c2) == FGEMMA_OK);
  CHECK(fgemma_caller_call(c2, tools, kMessages, "required", NULL, NULL) == FGEMMA_OK);
  second = caller_result(c2);
  CHECK(second && strstr(second, "\"cache\":\"file\""));
  if (first && second) {
    cut = strstr(first, "\"timing\"");
    CHECK(cut && strncmp(first, second, (size_t)(cut - first)) == 0);
  }
  /* Same request as an OpenAI body. */
  snprintf(openai, sizeof openai, "{\"model\":\"x\",\"tool_choice\":\"required\",\"tools\":%s,\"messages\":%s}", tools,
           kMessages);
  CHECK(fgemma_caller_call_openai(c2, openai, NULL, NULL) == FGEMMA_OK);
  free(second);
  second = caller_result(c2);
  CHECK(second && strstr(second, "\"cache\":\"memory\""));
  if (first && second) CHECK(strncmp(first, second, (size_t)(strstr(first, "\"timing\"") - first)) == 0);

  /* Cancellation: a pending cancel stops the next call; a callback returning non-zero stops this one. */
  CHECK(fgemma_caller_cancel(c) == FGEMMA_OK);
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", NULL, NULL) == FGEMMA_ERR_CANCELLED);
  CHECK(fgemma_caller_result_json(c, NULL, 0) == 0);
  st.tokens = 0;
  st.cancel_after = 1;
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", on_token, &st) == FGEMMA_ERR_CANCELLED);
  CHECK(st.tokens == 1);
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", NULL, NULL) == FGEMMA_OK);
  /* Bad input is an error, not a crash. */
  CHECK(fgemma_caller_call(c, "[", kMessages, NULL, NULL, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  CHECK(fgemma_caller_call(c, tools, kMessages, "no_such_tool", NULL, NULL) == FGEMMA_ERR_INVALID_ARGUMENT);
  fgemma_caller_free(c);
  fgemma_caller_free(c2);

  /* Budgets: one token, or a microsecond, is not enough for a call. */
  cp.max_tokens = 1;
  CHECK(fgemma_caller_new(model, cp, &c) == FGEMMA_OK);
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", NULL, NULL) == FGEMMA_ERR_BUDGET);
  CHECK(strstr(fgemma_last_error(), "budget") != NULL);
  fgemma_caller_free(c);
  cp.max_tokens = 0;
  cp.time_budget_ms = 0.001;
  CHECK(fgemma_caller_new(model, cp, &c) == FGEMMA_OK);
  CHECK(fgemma_caller_call(c, tools, kMessages, "required", NULL, NULL) == FGEMMA_ERR_BUDGET);
  fgemma_caller_free(c);
  free(first);
  free(second);
  remove(cache_path);
}

int main(int argc, char** argv) {
  char path[4096], cache[4096];
  char* tools;
  fgemma_model* model = NULL;
  fgemma_session* session = NULL;
  if (argc < 3) {
    fprintf(stderr, "usage: %s FIXTURES_DIR TMP_DIR\n", argv[0]);
    return 2;
  }
  CHECK(fgemma_abi_version() == FGEMMA_ABI_VERSION);
  snprintf(path, sizeof path, "%s/chat/smart-home-tools.json", argv[1]);
  tools = read_file(path);
  CHECK(tools != NULL);
  snprintf(path, sizeof path, "%s/models/mini-bf16", argv[1]);
  CHECK(fgemma_model_load(path, fgemma_model_default_params(), &model) == FGEMMA_OK);
  if (!model || !tools) return 1;
  CHECK(fgemma_model_vocab_size(model) == 262144);
  CHECK(fgemma_session_new(model, fgemma_session_default_params(), &session) == FGEMMA_OK);
  check_invalid_handles(model, session);
  fgemma_session_free(session);
  check_tokenizer(model);
  check_session(model, tools);
  snprintf(cache, sizeof cache, "%s/capi_flow.cache", argv[2]);
  check_caller(model, tools, cache);
  fgemma_model_free(model);
  free(tools);
  if (g_failures) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("capi_flow: all checks passed\n");
  return 0;
}
