// The one token-budget rule of every front end (CLI, C API, server, eval): how many tokens a call
// may generate when nobody asked for fewer.
#pragma once

#include <algorithm>
#include <cstddef>

namespace fgemma {

// The budget when none is given (a call's turn is far shorter: the grammar's bounds end it first).
inline constexpr size_t kDefaultMaxTokens = 1024;

// The generated-token cap of a caller over `context` positions: `requested`, or kDefaultMaxTokens
// for 0, never beyond the context (no call can generate more tokens than its context holds, so the
// clamp changes no answer; it only keeps a default such as the server's 1024 valid for a smaller
// context, where FunctionCaller::Call refuses a request's own limit beyond it).
constexpr size_t ResolveMaxTokens(size_t requested, size_t context) {
  return std::min(requested > 0 ? requested : kDefaultMaxTokens, context);
}

}  // namespace fgemma
