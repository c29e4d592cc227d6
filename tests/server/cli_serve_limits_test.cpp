// Issue #30, finding 7, through `fgemma serve`: --threads had no bound (2000 made 2,000 threads),
// `serve --context 0` started and refused every request, and durations read "nan" or "inf". Each is
// now refused before any work, naming the option. `timeout` turns a server that starts into exit 124.
// (Here, not in tests/cli: the cross builds' CLI has no `serve`.)
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace fgemma::cli_serve_limits_test {
namespace {

std::string Serve(const std::string& options) {
  return "timeout 60 " + test::CliPath() + " serve --model " + test::FixturePath("models/mini-bf16") +
         " --port 0 " + options + " 2>&1";
}

void ExpectRefused(const std::string& command, const std::string& words) {
  EXPECT_EQ(test::RefusalProblem(command, words), "");
}

TEST(CliServeLimits, ContextOfZeroOrPastTheModelIsRefused) {
  ExpectRefused(Serve("--context 0"), "--context");
  ExpectRefused(Serve("--context 1000000"), "max_position_embeddings");
}

TEST(CliServeLimits, ThreadsAreBounded) { ExpectRefused(Serve("--threads 2000"), "--threads"); }

TEST(CliServeLimits, DurationsMustBeFiniteAndAtMostADay) {
  for (const char* value : {"nan", "inf", "-1", "1e300"}) {
    ExpectRefused(Serve(std::string("--request-timeout-s ") + value), "--request-timeout-s");
    ExpectRefused(Serve(std::string("--drain-s ") + value), "--drain-s");
  }
}

}  // namespace
}  // namespace fgemma::cli_serve_limits_test
