// Status and Result<T>: how every fallible library call reports failure.
//
// The library never throws across its public surface and never calls exit(); a failing call returns a
// Status whose message names the file, field or offset at fault. Result<T> is a small expected-like
// holder (std::expected is C++23) so call sites read `FGEMMA_TRY(auto x, Parse(...))`.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace fgemma {

enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // caller passed something malformed (bad id, bad option, bad JSON text)
  kNotFound = 2,          // a file, tensor or key that must exist does not
  kCorruptFile = 3,       // a file's bytes contradict its own format (truncated, offsets out of range)
  kUnsupported = 4,       // valid input we do not handle (dtype, architecture, template)
  kOutOfRange = 5,        // a limit was exceeded (context length, 32-bit address space)
  kIoError = 6,           // the OS refused (open, mmap, write)
  kOutOfMemory = 7,
  kCancelled = 8,
  kInternal = 9,
  kLast = kInternal,      // the C API checks every code against its fgemma_status at compile time
};

const char* ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt file: model.safetensors: header length 99999 exceeds file size 812"
  std::string ToString() const;

  // Prefixes context ("loading /path/model.safetensors: ") to an error; no-op on OK.
  Status WithContext(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status CorruptFile(std::string m) { return {ErrorCode::kCorruptFile, std::move(m)}; }
inline Status Unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {ErrorCode::kOutOfRange, std::move(m)}; }
inline Status IoError(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {       // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fgemma

#define FGEMMA_CONCAT_INNER(a, b) a##b
#define FGEMMA_CONCAT(a, b) FGEMMA_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` fails.
#define FGEMMA_RETURN_IF_ERROR(expr)               \
  do {                                             \
    ::fgemma::Status fgemma_status_ = (expr);      \
    if (!fgemma_status_.ok()) return fgemma_status_; \
  } while (0)

// FGEMMA_TRY(auto x, MakeX()) declares x from a Result or returns its error.
#define FGEMMA_TRY(decl, expr) FGEMMA_TRY_IMPL(FGEMMA_CONCAT(fgemma_result_, __LINE__), decl, expr)
#define FGEMMA_TRY_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                     \
  if (!tmp.ok()) return tmp.status();    \
  decl = std::move(tmp).value()
