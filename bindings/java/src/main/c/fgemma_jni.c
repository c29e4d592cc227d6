/* JNI for dev.fgemma.Native: a thin layer over the C API (include/fgemma/fgemma.h), nothing else of
 * the engine. Never lets a C error or a Java exception cross wrongly: every failure becomes a
 * dev.fgemma.FgemmaException(status, message); a listener's exception cancels the call and is
 * rethrown after it. Strings arrive as NUL-terminated UTF-8 byte arrays. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fgemma/fgemma.h"

static void throw_status(JNIEnv* env, int status, const char* message) {
  if ((*env)->ExceptionCheck(env)) return;
  jclass cls = (*env)->FindClass(env, "dev/fgemma/FgemmaException");
  if (cls == NULL) return;
  jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  /* The message may hold any bytes: built by Java from UTF-8 through a byte array. */
  jstring text = NULL;
  jbyteArray bytes = (*env)->NewByteArray(env, (jsize)strlen(message));
  if (bytes != NULL) {
    (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)strlen(message), (const jbyte*)message);
    jclass native = (*env)->FindClass(env, "dev/fgemma/Native");
    jmethodID to_string = native ? (*env)->GetStaticMethodID(env, native, "string", "([B)Ljava/lang/String;") : NULL;
    if (to_string != NULL) text = (jstring)(*env)->CallStaticObjectMethod(env, native, to_string, bytes);
  }
  if ((*env)->ExceptionCheck(env)) return;
  jobject ex = (*env)->NewObject(env, cls, ctor, (jint)status, text);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

static void throw_last(JNIEnv* env, int status) { throw_status(env, status, fgemma_last_error()); }

/* A Java byte[] (NUL-terminated UTF-8) as a C string owned by the caller; NULL for a null array.
 * *failed is set when an exception is pending. */
static char* c_string(JNIEnv* env, jbyteArray array, int* failed) {
  if (array == NULL) return NULL;
  const jsize n = (*env)->GetArrayLength(env, array);
  char* s = (char*)malloc((size_t)n + 1);
  if (s == NULL) {
    throw_status(env, FGEMMA_ERR_OUT_OF_MEMORY, "out of memory");
    *failed = 1;
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, array, 0, n, (jbyte*)s);
  s[n] = '\0';
  return s;
}

static jbyteArray byte_array(JNIEnv* env, const char* data, size_t n) {
  jbyteArray a = (*env)->NewByteArray(env, (jsize)n);
  if (a != NULL) (*env)->SetByteArrayRegion(env, a, 0, (jsize)n, (const jbyte*)data);
  return a;
}

JNIEXPORT jbyteArray JNICALL Java_dev_fgemma_Native_version(JNIEnv* env, jclass cls) {
  (void)cls;
  const char* v = fgemma_version();
  return byte_array(env, v, strlen(v));
}

/* The params structs this file fills through fgemma_*_default_params(): review them when the ABI
 * changes (3 added draft, lora_path and lora_scale; 4 share_passes). */
_Static_assert(FGEMMA_ABI_VERSION == 4, "fgemma_jni.c was written against FGEMMA_ABI_VERSION 4");

JNIEXPORT jint JNICALL Java_dev_fgemma_Native_abiVersion(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return fgemma_abi_version();
}

JNIEXPORT jlong JNICALL Java_dev_fgemma_Native_modelLoad(JNIEnv* env, jclass cls, jbyteArray path,
                                                         jbyteArray tokenizer) {
  (void)cls;
  int failed = 0;
  char* p = c_string(env, path, &failed);
  char* t = failed ? NULL : c_string(env, tokenizer, &failed);
  fgemma_model* model = NULL;
  if (!failed) {
    fgemma_model_params params = fgemma_model_default_params();
    params.tokenizer_path = t;
    const fgemma_status st = fgemma_model_load(p, params, &model);
    if (st != FGEMMA_OK) throw_last(env, st);
  }
  free(p);
  free(t);
  return (jlong)(intptr_t)model;
}

JNIEXPORT void JNICALL Java_dev_fgemma_Native_modelFree(JNIEnv* env, jclass cls, jlong model) {
  (void)env;
  (void)cls;
  fgemma_model_free((fgemma_model*)(intptr_t)model);
}

JNIEXPORT jint JNICALL Java_dev_fgemma_Native_modelVocabSize(JNIEnv* env, jclass cls, jlong model) {
  (void)cls;
  const int32_t n = fgemma_model_vocab_size((const fgemma_model*)(intptr_t)model);
  if (n < 0) throw_last(env, FGEMMA_ERR_INVALID_ARGUMENT);
  return n;
}

JNIEXPORT jlong JNICALL Java_dev_fgemma_Native_callerNew(JNIEnv* env, jclass cls, jlong model, jbyteArray cache,
                                                         jint n_ctx, jint n_threads, jint max_tokens,
                                                         jdouble time_budget_ms, jboolean trust_content_tokens,
                                                         jboolean draft, jbyteArray lora, jfloat lora_scale,
                                                         jboolean share_passes) {
  (void)cls;
  int failed = 0;
  char* cache_path = c_string(env, cache, &failed);
  char* lora_path = failed ? NULL : c_string(env, lora, &failed);
  fgemma_caller* caller = NULL;
  if (!failed) {
    fgemma_caller_params params = fgemma_caller_default_params();
    params.cache_path = cache_path;
    if (n_ctx > 0) params.n_ctx = (uint32_t)n_ctx;
    params.n_threads = n_threads;
    params.max_tokens = (uint32_t)max_tokens;
    params.time_budget_ms = time_budget_ms;
    params.trust_content_tokens = trust_content_tokens == JNI_TRUE;
    params.draft = draft == JNI_TRUE;
    params.lora_path = lora_path;
    params.lora_scale = lora_scale;
    params.share_passes = share_passes == JNI_TRUE;
    const fgemma_status st = fgemma_caller_new((const fgemma_model*)(intptr_t)model, params, &caller);
    if (st != FGEMMA_OK) throw_last(env, st);
  }
  free(cache_path);
  free(lora_path);
  return (jlong)(intptr_t)caller;
}

JNIEXPORT void JNICALL Java_dev_fgemma_Native_callerFree(JNIEnv* env, jclass cls, jlong caller) {
  (void)env;
  (void)cls;
  fgemma_caller_free((fgemma_caller*)(intptr_t)caller);
}

/* The token callback's state: where to forward, and the listener's exception if it threw. */
typedef struct {
  JNIEnv* env;
  jobject listener;
  jclass native;
  jmethodID dispatch;
  jthrowable thrown; /* a global reference, rethrown after the call */
} listener_state;

static int forward_token(int32_t token, const char* text, size_t text_len, void* user_data) {
  listener_state* s = (listener_state*)user_data;
  JNIEnv* env = s->env;
  jbyteArray bytes = byte_array(env, text, text_len);
  if (bytes != NULL) (*env)->CallStaticVoidMethod(env, s->native, s->dispatch, s->listener, (jint)token, bytes);
  if (bytes != NULL) (*env)->DeleteLocalRef(env, bytes);
  if ((*env)->ExceptionCheck(env)) {
    jthrowable ex = (*env)->ExceptionOccurred(env);
    (*env)->ExceptionClear(env);
    s->thrown = (jthrowable)(*env)->NewGlobalRef(env, ex);
    (*env)->DeleteLocalRef(env, ex);
    return 1; /* cancel */
  }
  return 0;
}

JNIEXPORT jbyteArray JNICALL Java_dev_fgemma_Native_callerCall(JNIEnv* env, jclass cls, jlong caller_handle,
                                                               jbyteArray tools, jbyteArray messages,
                                                               jbyteArray tool_choice, jobject listener) {
  int failed = 0;
  char* t = c_string(env, tools, &failed);
  char* m = failed ? NULL : c_string(env, messages, &failed);
  char* c = failed ? NULL : c_string(env, tool_choice, &failed);
  jbyteArray result = NULL;
  if (!failed) {
    fgemma_caller* caller = (fgemma_caller*)(intptr_t)caller_handle;
    listener_state state = {env, listener, cls, NULL, NULL};
    if (listener != NULL)
      state.dispatch = (*env)->GetStaticMethodID(env, cls, "dispatch", "(Ldev/fgemma/TokenListener;I[B)V");
    if (listener == NULL || state.dispatch != NULL) {
      const fgemma_status st =
          fgemma_caller_call(caller, t, m, c, listener != NULL ? forward_token : NULL, &state);
      if (state.thrown != NULL) {
        (*env)->Throw(env, state.thrown);
        (*env)->DeleteGlobalRef(env, state.thrown);
      } else if (st != FGEMMA_OK) {
        throw_last(env, st);
      } else {
        const int64_t n = fgemma_caller_result_json(caller, NULL, 0);
        char* json = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
        if (n < 0) {
          throw_last(env, (int)-n);
        } else if (json == NULL) {
          throw_status(env, FGEMMA_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
          fgemma_caller_result_json(caller, json, (size_t)n + 1);
          result = byte_array(env, json, (size_t)n);
          free(json);
        }
      }
    }
  }
  free(t);
  free(m);
  free(c);
  return result;
}

JNIEXPORT void JNICALL Java_dev_fgemma_Native_callerCancel(JNIEnv* env, jclass cls, jlong caller) {
  (void)cls;
  const fgemma_status st = fgemma_caller_cancel((fgemma_caller*)(intptr_t)caller);
  if (st != FGEMMA_OK) throw_last(env, st);
}

/* The prompt ids of the caller's last call, as an int[] (fgemma_caller_prompt_tokens). */
JNIEXPORT jintArray JNICALL Java_dev_fgemma_Native_callerPromptTokens(JNIEnv* env, jclass cls, jlong caller) {
  (void)cls;
  fgemma_caller* c = (fgemma_caller*)(intptr_t)caller;
  const int64_t n = fgemma_caller_prompt_tokens(c, NULL, 0);
  if (n < 0) {
    throw_last(env, (int)-n);
    return NULL;
  }
  if (n > INT32_MAX) {
    throw_status(env, FGEMMA_ERR_OUT_OF_RANGE, "prompt too long for a Java array");
    return NULL;
  }
  jintArray out = (*env)->NewIntArray(env, (jsize)n);
  if (out == NULL) return NULL; /* OutOfMemoryError pending */
  if (n == 0) return out;
  jint* ids = (*env)->GetIntArrayElements(env, out, NULL);
  if (ids == NULL) return NULL;
  /* jint is a 32-bit int like int32_t. */
  const int64_t m = fgemma_caller_prompt_tokens(c, (int32_t*)ids, (size_t)n);
  (*env)->ReleaseIntArrayElements(env, out, ids, 0);
  if (m < 0) {
    throw_last(env, (int)-m);
    return NULL;
  }
  return out;
}
