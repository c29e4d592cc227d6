// Thin C++20 API over the C API (fgemma.h): RAII handles, std::span / std::string_view arguments,
// and expected-style fgemma::api::Result<T> returns. Header-only; links against libfgemma.so.
//
// Errors never throw: every failure of the library comes back as a Result holding an Error (the
// fgemma_status and fgemma_last_error()'s message). The only exceptions are the caller's own: an
// exception thrown by a TokenCallback cancels the call and is rethrown once the C call returned,
// and std::bad_alloc from the wrapper's own strings and vectors.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "fgemma/fgemma.h"

namespace fgemma::api {

struct Error {
  fgemma_status status = FGEMMA_ERR_INTERNAL;
  std::string message;
};

// Holds a value or an Error (std::expected is C++23).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const Error& error() const { return std::get<1>(v_); }
  // FGEMMA_OK when a value is held.
  fgemma_status status() const { return ok() ? FGEMMA_OK : error().status; }

 private:
  std::variant<T, Error> v_;
};

// For calls that return nothing but may fail.
using Status = Result<std::monostate>;

inline Error LastError(fgemma_status st) { return Error{st, fgemma_last_error()}; }
inline Error LastError(int64_t negative) { return LastError(static_cast<fgemma_status>(-negative)); }
inline Status ToStatus(fgemma_status st) { return st == FGEMMA_OK ? Status(std::monostate{}) : Status(LastError(st)); }

// Runs a length-returning C call twice: once to size the buffer, once to fill it.
template <typename F>
Result<std::string> FillString(F&& call) {
  int64_t n = call(nullptr, 0);
  if (n < 0) return LastError(n);
  std::string s(static_cast<size_t>(n), '\0');
  n = call(s.data(), s.size() + 1);
  if (n < 0) return LastError(n);
  return s;
}

// Sees each generated token and the text it completes (empty while a UTF-8 character is still
// incomplete). Returning false cancels: the call then fails with FGEMMA_ERR_CANCELLED.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

namespace detail {

// Adapts a TokenCallback to fgemma_token_callback. An exception from the callback is kept (and
// the call cancelled) so it is rethrown on this side of the C API instead of crossing it.
class CallbackAdapter {
 public:
  explicit CallbackAdapter(const TokenCallback& callback) : callback_(callback ? &callback : nullptr) {}
  fgemma_token_callback function() const { return callback_ ? &Trampoline : nullptr; }
  void* user_data() { return callback_ ? this : nullptr; }
  void RethrowIfFailed() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static int Trampoline(int32_t token, const char* text, size_t len, void* user) {
    auto* self = static_cast<CallbackAdapter*>(user);
    try {
      return (*self->callback_)(token, std::string_view(text ? text : "", text ? len : 0)) ? 0 : 1;
    } catch (...) {
      self->error_ = std::current_exception();
      return 1;
    }
  }
  const TokenCallback* callback_;
  std::exception_ptr error_;
};

}  // namespace detail

class Model {
 public:
  static Result<Model> Load(const std::string& path, fgemma_model_params params = fgemma_model_default_params()) {
    fgemma_model* m = nullptr;
    fgemma_status st = fgemma_model_load(path.c_str(), params, &m);
    if (st != FGEMMA_OK) return LastError(st);
    return Model(m);
  }
  const fgemma_model* get() const { return m_.get(); }
  int32_t vocab_size() const { return fgemma_model_vocab_size(get()); }
  int32_t bos() const { return fgemma_model_bos(get()); }
  bool is_eos(int32_t token) const { return fgemma_model_is_eos(get(), token); }

  Result<std::vector<int32_t>> Tokenize(std::string_view text, bool add_bos = false, bool parse_special = false) const {
    int64_t n = fgemma_tokenize(get(), text.data(), text.size(), add_bos, parse_special, nullptr, 0);
    if (n < 0) return LastError(n);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    n = fgemma_tokenize(get(), text.data(), text.size(), add_bos, parse_special, ids.data(), ids.size());
    if (n < 0) return LastError(n);
    return ids;
  }
  Result<std::string> Detokenize(std::span<const int32_t> ids, bool skip_special = false) const {
    return FillString([&](char* b, size_t cap) { return fgemma_detokenize(get(), ids.data(), ids.size(), skip_special, b, cap); });
  }
  // {"tools","messages","add_generation_prompt"?} or an OpenAI chat-completions body -> prompt text.
  Result<std::string> Render(const std::string& request_json) const {
    return FillString([&](char* b, size_t cap) { return fgemma_render(get(), request_json.c_str(), b, cap); });
  }

 private:
  explicit Model(fgemma_model* m) : m_(m, &fgemma_model_free) {}
  std::shared_ptr<fgemma_model> m_;  // shared: a model is immutable and used by many sessions
};

// Sessions and callers must be destroyed before the Model they were created from (fgemma.h).
class Session {
 public:
  static Result<Session> Create(const Model& model, fgemma_session_params params = fgemma_session_default_params()) {
    fgemma_session* s = nullptr;
    fgemma_status st = fgemma_session_new(model.get(), params, &s);
    if (st != FGEMMA_OK) return LastError(st);
    return Session(s);
  }
  const fgemma_session* get() const { return s_.get(); }
  // Tokens evaluated so far (-1 on a moved-from session).
  int64_t position() const {
    const int64_t p = fgemma_session_position(s_.get());
    return p < 0 ? -1 : p;
  }
  // Appends tokens; fills `logits` (vocab_size floats) for the last one when non-empty. Returns its argmax.
  Result<int32_t> Eval(std::span<const int32_t> tokens, std::span<float> logits = {}) {
    int32_t argmax = -1;
    fgemma_status st = fgemma_session_eval(s_.get(), tokens.data(), tokens.size(),
                                           logits.empty() ? nullptr : logits.data(), logits.size(), &argmax);
    if (st != FGEMMA_OK) return LastError(st);
    return argmax;
  }
  // Greedy continuation of `prompt` (evaluated first), up to max_new tokens; `on_token` (optional)
  // streams them and may cancel. Returns the generated ids.
  Result<std::vector<int32_t>> Generate(std::span<const int32_t> prompt, size_t max_new, bool stop_at_eos = true,
                                        const TokenCallback& on_token = {}) {
    std::vector<int32_t> out(max_new);
    size_t n = 0;
    detail::CallbackAdapter adapter(on_token);
    fgemma_status st = fgemma_session_generate(s_.get(), prompt.data(), prompt.size(), max_new, stop_at_eos,
                                               out.data(), out.size(), &n, adapter.function(), adapter.user_data());
    adapter.RethrowIfFailed();
    if (st != FGEMMA_OK) return LastError(st);
    out.resize(n);
    return out;
  }
  Status Reset() { return ToStatus(fgemma_session_reset(s_.get())); }

 private:
  explicit Session(fgemma_session* s) : s_(s) {}
  struct Free {
    void operator()(fgemma_session* s) const { fgemma_session_free(s); }
  };
  std::unique_ptr<fgemma_session, Free> s_;
};

class Caller {
 public:
  static Result<Caller> Create(const Model& model, fgemma_caller_params params = fgemma_caller_default_params()) {
    fgemma_caller* c = nullptr;
    fgemma_status st = fgemma_caller_new(model.get(), params, &c);
    if (st != FGEMMA_OK) return LastError(st);
    return Caller(c);
  }
  const fgemma_caller* get() const { return c_.get(); }
  // Returns the outcome JSON ({"calls":[...],"text":...,"timing":{...}}), as `fgemma call` prints it.
  // tool_choice: "auto", "required", "none", a function name or an OpenAI tool_choice object as JSON.
  Result<std::string> Call(const std::string& tools_json, const std::string& messages_json,
                           const std::string& tool_choice = "auto", const TokenCallback& on_token = {}) {
    detail::CallbackAdapter adapter(on_token);
    fgemma_status st = fgemma_caller_call(c_.get(), tools_json.c_str(), messages_json.c_str(), tool_choice.c_str(),
                                          adapter.function(), adapter.user_data());
    adapter.RethrowIfFailed();
    if (st != FGEMMA_OK) return LastError(st);
    return ResultJson();
  }
  // The same from an OpenAI chat-completions body (its tools, messages and tool_choice).
  Result<std::string> CallOpenAI(const std::string& body_json, const TokenCallback& on_token = {}) {
    detail::CallbackAdapter adapter(on_token);
    fgemma_status st = fgemma_caller_call_openai(c_.get(), body_json.c_str(), adapter.function(), adapter.user_data());
    adapter.RethrowIfFailed();
    if (st != FGEMMA_OK) return LastError(st);
    return ResultJson();
  }
  // The outcome JSON of the last successful call.
  Result<std::string> ResultJson() const {
    return FillString([&](char* b, size_t cap) { return fgemma_caller_result_json(c_.get(), b, cap); });
  }
  // The prompt ids of the last call that ran (see fgemma_caller_prompt_tokens). Whether content may
  // hold control tokens is params.trust_content_tokens (false by default).
  Result<std::vector<int32_t>> PromptTokens() const {
    int64_t n = fgemma_caller_prompt_tokens(c_.get(), nullptr, 0);
    if (n < 0) return LastError(n);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    n = fgemma_caller_prompt_tokens(c_.get(), ids.data(), ids.size());
    if (n < 0) return LastError(n);
    return ids;
  }
  // Any thread: cancels the call in progress, or else the next one.
  Status Cancel() { return ToStatus(fgemma_caller_cancel(c_.get())); }

 private:
  explicit Caller(fgemma_caller* c) : c_(c) {}
  struct Free {
    void operator()(fgemma_caller* c) const { fgemma_caller_free(c); }
  };
  std::unique_ptr<fgemma_caller, Free> c_;
};

}  // namespace fgemma::api
