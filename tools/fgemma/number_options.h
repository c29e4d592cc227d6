// Numeric options every command reads the same way, refused at parse time when no run can honour
// them (docs/limits.md): --threads beyond util/run_limits.h's kMaxThreads, "nan" or "inf" (which
// CLI11 reads as doubles) where a duration is wanted.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace fgemma::cli {

// --threads: 0 (all cores) to kMaxThreads.
CLI::Option* AddThreadsOption(CLI::App* cmd, int* threads, const std::string& help);

// A finite number in [0, max] (CLI::Range lets NaN through: every comparison with it is false).
CLI::Validator FiniteNonNegative(double max);
// A duration in seconds: finite, 0 to one day (util/run_limits.h kMaxTimeBudgetMs).
CLI::Validator SecondsUpToADay();

}  // namespace fgemma::cli
