// One function-call request as every front end hands it to FunctionCaller::Call: the conversation
// (tools + messages), the tool_choice, and the limits the caller enforces itself (generated tokens,
// a deadline, a cancel flag). The CLI, the C API and the server only translate their inputs into a
// CallRequest and the outcome's FinishReason back into their own terms.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "chat/call_grammar.h"
#include "chat/request.h"

namespace fgemma {

// Why generation ended. The first two mean the turn ended as the grammar allows; the others that it
// was stopped early (the outcome then holds what was generated until then).
enum class FinishReason {
  kToolCalls,  // the turn ended with at least one call
  kStop,       // the turn ended with text only
  kLength,     // the token limit was reached before the turn ended
  kCancelled,  // the cancel flag was set, or on_token returned false
  kDeadline,   // the deadline passed
};
// "tool_calls", "stop", "length", "cancelled", "deadline" (OpenAI's names for the first three).
const char* FinishReasonName(FinishReason reason);

struct CallLimits {
  // Generated tokens; 0: the caller's own cap (FunctionCallerOptions::decoding.max_tokens, which
  // Engine::NewCaller sets by ResolveMaxTokens in runtime/token_budget.h). It becomes
  // ConstrainedOptions::max_tokens, the cap the generator obeys; beyond the context it is refused.
  size_t max_tokens = 0;
  // Checked before the call starts and at each generated token.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Read (never written) before the call starts and at each generated token; any thread may set it.
  const std::atomic<bool>* cancel = nullptr;
};

struct CallRequest {
  ChatRequest chat{};
  ToolChoice tool_choice{};
  CallLimits limits{};
  // Sees each generated token once the limits let it through; returning false stops the call
  // (FinishReason::kCancelled).
  std::function<bool(int32_t)> on_token{};
  // Free greedy decoding (runtime/free_decode.h) instead of the grammar: the text is parsed and
  // checked afterwards, as other engines' output is, so it may not parse or validate, and
  // tool_choice is not enforced. What `fgemma eval --unconstrained` measures.
  bool unconstrained = false;
};

}  // namespace fgemma
