// Shared by the C API shim files: the handle structs behind the opaque pointers and the
// error plumbing (Status -> fgemma_status + thread-local message; exceptions stopped at the boundary).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fgemma/fgemma.h"
#include "runtime/engine.h"
#include "runtime/function_caller.h"
#include "runtime/loaded_model.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

// Each handle starts with a tag so a freed or wrong-kind pointer is refused instead of used.
// The tag is cleared on free; it catches use-after-free as long as the memory was not reused.
enum : uint32_t { kModelTag = 0x4d4f444c, kSessionTag = 0x53455353, kCallerTag = 0x43414c4c, kDeadTag = 0 };

struct fgemma_model {
  uint32_t tag = kModelTag;
  // Set by fgemma_model_load: the runtime engine every caller of this model is made by (its
  // adapters and pass groups shared by them), and its loaded model.
  std::unique_ptr<fgemma::Engine> engine;
  const fgemma::LoadedModel* loaded = nullptr;
  // The application's reference plus one per live session and caller: fgemma_model_free drops the
  // first, and the memory goes with the last (a model freed before its callers outlives them).
  mutable std::atomic<int> references{1};
};

struct fgemma_session {
  uint32_t tag = kSessionTag;
  const fgemma_model* owner = nullptr;
  std::unique_ptr<fgemma::Session> session;
};

struct fgemma_caller {
  uint32_t tag = kCallerTag;
  const fgemma_model* owner = nullptr;
  fgemma_caller_params params{};
  std::string cache_path;
  std::unique_ptr<fgemma::FunctionCaller> caller;
  std::string result_json;
  std::vector<int32_t> prompt_tokens;  // of the last call that ran (fgemma_caller_prompt_tokens)
  std::atomic<bool> cancel{false};
};

namespace fgemma::capi {

inline bool Valid(const fgemma_model* m) { return m && m->tag == kModelTag; }
inline bool Valid(const fgemma_session* s) { return s && s->tag == kSessionTag; }
inline bool Valid(const fgemma_caller* c) { return c && c->tag == kCallerTag; }

// A session or caller made from `model` holds it until ReleaseModel.
void RetainModel(const fgemma_model* model);
void ReleaseModel(const fgemma_model* model);

// Records the message for fgemma_last_error() and returns the matching C status.
fgemma_status Fail(fgemma_status status, const std::string& message);
fgemma_status Fail(const Status& status);
// The adapter spec of the params' lora_path and lora_scale (dir "" when NULL: no adapter); an empty
// path is refused (`what` names the function).
Result<LoraSpec> LoraSpecOf(const char* path, float scale, const char* what);
void ClearError();
// Copies `text` into a caller buffer (NUL-terminated when cap > 0); returns its length.
int64_t CopyOut(const std::string& text, char* buf, size_t cap);

// Runs `body` with every exception turned into FGEMMA_ERR_INTERNAL / OUT_OF_MEMORY.
template <typename F>
fgemma_status Guard(F&& body) noexcept {
  try {
    ClearError();
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(FGEMMA_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(FGEMMA_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(FGEMMA_ERR_INTERNAL, "internal error: unknown exception");
  }
}

// Same for the length-returning calls: a negative result is -fgemma_status.
template <typename F>
int64_t GuardLength(F&& body) noexcept {
  int64_t length = 0;
  fgemma_status st = Guard([&]() -> fgemma_status {
    int64_t r = body();
    if (r < 0) return static_cast<fgemma_status>(-r);
    length = r;
    return FGEMMA_OK;
  });
  return st == FGEMMA_OK ? length : -static_cast<int64_t>(st);
}

}  // namespace fgemma::capi
