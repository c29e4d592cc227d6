#include "util/run_limits.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace fgemma {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

Status CheckThreadCount(int64_t threads, std::string_view what) {
  if (threads >= 0 && threads <= kMaxThreads) return Status::Ok();
  return (threads < 0 ? InvalidArgument : OutOfRange)(std::string(what) + ": " + std::to_string(threads) + " threads is outside 0 (all cores) to " +
                    std::to_string(kMaxThreads));
}

Status CheckTimeBudgetMs(double milliseconds, std::string_view what) {
  if (!std::isfinite(milliseconds)) return InvalidArgument(std::string(what) + ": " + Number(milliseconds) + " is not a finite number");
  if (milliseconds >= 0 && milliseconds <= kMaxTimeBudgetMs) return Status::Ok();
  return OutOfRange(std::string(what) + ": " + Number(milliseconds) + " ms is outside 0 (no budget) to " +
                    Number(kMaxTimeBudgetMs) + " (one day)");
}

Status CheckLoraScale(double scale, std::string_view what) {
  if (!std::isfinite(scale)) return InvalidArgument(std::string(what) + ": " + Number(scale) + " is not a finite number");
  if (std::fabs(scale) <= kMaxLoraScale) return Status::Ok();
  return OutOfRange(std::string(what) + ": " + Number(scale) + " is beyond +-" + Number(kMaxLoraScale));
}

}  // namespace fgemma
