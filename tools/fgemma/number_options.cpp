#include "number_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/run_limits.h"

namespace fgemma::cli {

CLI::Option* AddThreadsOption(CLI::App* cmd, int* threads, const std::string& help) {
  return cmd->add_option("--threads", *threads, help)->check(CLI::Range(0, static_cast<int>(kMaxThreads)));
}

CLI::Validator FiniteNonNegative(double max) {
  char bound[32];
  std::snprintf(bound, sizeof(bound), "%g", max);
  return CLI::Validator(
      [max, limit = std::string(bound)](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v > max)
          return "Value " + text + " is not a finite number from 0 to " + limit;
        return "";
      },
      std::string("FLOAT in [0 - ") + bound + "]");
}

CLI::Validator SecondsUpToADay() { return FiniteNonNegative(kMaxTimeBudgetMs / 1000.0); }

}  // namespace fgemma::cli
