// Thin C++20 API over the C API (fgemma.h): RAII handles, std::span / std::string_view arguments,
// and expected-style fgemma::api::Result<T> returns. Header-only; links against libfgemma.so.
#pragma once

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
  T& value() { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

inline Error LastError(fgemma_status st) { return Error{st, fgemma_last_error()}; }
inline Error LastError(int64_t negative) { return LastError(static_cast<fgemma_status>(-negative)); }

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
  Result<std::string> Render(const std::string& request_json) const {
    return FillString([&](char* b, size_t cap) { return fgemma_render(get(), request_json.c_str(), b, cap); });
  }

 private:
  explicit Model(fgemma_model* m) : m_(m, &fgemma_model_free) {}
  std::shared_ptr<fgemma_model> m_;  // shared: a model is immutable and used by many sessions
};

class Session {
 public:
  static Result<Session> Create(const Model& model, fgemma_session_params params = fgemma_session_default_params()) {
    fgemma_session* s = nullptr;
    fgemma_status st = fgemma_session_new(model.get(), params, &s);
    if (st != FGEMMA_OK) return LastError(st);
    return Session(s);
  }
  // Appends tokens; fills `logits` (vocab_size floats) for the last one when non-empty. Returns its argmax.
  Result<int32_t> Eval(std::span<const int32_t> tokens, std::span<float> logits = {}) {
    int32_t argmax = -1;
    fgemma_status st = fgemma_session_eval(s_.get(), tokens.data(), tokens.size(),
                                           logits.empty() ? nullptr : logits.data(), logits.size(), &argmax);
    if (st != FGEMMA_OK) return LastError(st);
    return argmax;
  }
  Result<std::vector<int32_t>> Generate(std::span<const int32_t> prompt, size_t max_new, bool stop_at_eos = true) {
    std::vector<int32_t> out(max_new);
    size_t n = 0;
    fgemma_status st = fgemma_session_generate(s_.get(), prompt.data(), prompt.size(), max_new, stop_at_eos,
                                               out.data(), out.size(), &n, nullptr, nullptr);
    if (st != FGEMMA_OK) return LastError(st);
    out.resize(n);
    return out;
  }
  void Reset() { fgemma_session_reset(s_.get()); }

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
  // Returns the outcome JSON ({"calls":[...],"text":...,"timing":{...}}), as `fgemma call` prints it.
  Result<std::string> Call(const std::string& tools_json, const std::string& messages_json,
                           const std::string& tool_choice = "auto", fgemma_token_callback callback = nullptr,
                           void* user_data = nullptr) {
    fgemma_status st = fgemma_caller_call(c_.get(), tools_json.c_str(), messages_json.c_str(), tool_choice.c_str(),
                                          callback, user_data);
    if (st != FGEMMA_OK) return LastError(st);
    return FillString([&](char* b, size_t cap) { return fgemma_caller_result_json(c_.get(), b, cap); });
  }
  Result<std::string> CallOpenAI(const std::string& body_json) {
    fgemma_status st = fgemma_caller_call_openai(c_.get(), body_json.c_str(), nullptr, nullptr);
    if (st != FGEMMA_OK) return LastError(st);
    return FillString([&](char* b, size_t cap) { return fgemma_caller_result_json(c_.get(), b, cap); });
  }
  // Any thread.
  void Cancel() { fgemma_caller_cancel(c_.get()); }

 private:
  explicit Caller(fgemma_caller* c) : c_(c) {}
  struct Free {
    void operator()(fgemma_caller* c) const { fgemma_caller_free(c); }
  };
  std::unique_ptr<fgemma_caller, Free> c_;
};

}  // namespace fgemma::api
