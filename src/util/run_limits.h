// The bounds on the numbers a user sets for a run (threads, time budgets, adapter scales), checked
// where each enters the engine (C API params, FunctionCaller/Session options, CLI flags), so a
// value no machine can honour is refused with a message naming it instead of creating two billion
// threads or a deadline that has passed already. docs/limits.md lists them for users.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/status.h"

namespace fgemma {

// Threads of one pool (0 = all cores). More than this many only adds scheduling for a 270M model.
inline constexpr int64_t kMaxThreads = 256;
// A per-call wall-clock budget (0 = none): one day, far past any call, well inside the clock's range.
inline constexpr double kMaxTimeBudgetMs = 86'400'000.0;
// |LoRA scale| and |alpha / rank|: PEFT adapters use about 0.1 to 64; beyond this the update
// overflows the activations' floats.
inline constexpr double kMaxLoraScale = 1000.0;

// `what` names the field in the error ("threads", "n_threads", "--threads").
Status CheckThreadCount(int64_t threads, std::string_view what);
// Finite and in [0, kMaxTimeBudgetMs].
Status CheckTimeBudgetMs(double milliseconds, std::string_view what);
// Finite and |scale| <= kMaxLoraScale.
Status CheckLoraScale(double scale, std::string_view what);

}  // namespace fgemma
