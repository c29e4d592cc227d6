// Issue #30, finding 7, through the CLI: --threads had no bound (2000 made 2,000 threads), `serve
// --context 0` started and refused every request, and durations read "nan" or "inf". Each is now
// refused before any work, naming the option. `timeout` turns a server that starts into exit 124.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace fgemma::cli_limits_test {
namespace {

std::string Serve(const std::string& options) {
  return "timeout 60 " + test::CliPath() + " serve --model " + test::FixturePath("models/mini-bf16") +
         " --port 0 " + options + " 2>&1";
}

void ExpectRefused(const std::string& command, const std::string& words) {
  std::string out;
  const int code = test::RunCommand(command, &out);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, 124) << "still running after 60 s: " << out;
  EXPECT_NE(out.find(words), std::string::npos) << command << "\n" << out;
}

TEST(CliLimits, ServeRefusesAContextOfZeroOrPastTheModel) {
  ExpectRefused(Serve("--context 0"), "--context");
  ExpectRefused(Serve("--context 1000000"), "max_position_embeddings");
}

TEST(CliLimits, ThreadsAreBoundedInEveryCommand) {
  ExpectRefused(Serve("--threads 2000"), "--threads");
  ExpectRefused("timeout 60 " + test::CliPath() + " call --model " + test::FixturePath("models/mini-bf16") +
                    " --tools " + test::FixturePath("chat/smart-home-tools.json") + " --threads 2147483647 'lights on' 2>&1",
                "--threads");
}

TEST(CliLimits, DurationsMustBeFiniteAndAtMostADay) {
  for (const char* value : {"nan", "inf", "-1", "1e300"}) {
    ExpectRefused(Serve(std::string("--request-timeout-s ") + value), "--request-timeout-s");
    ExpectRefused(Serve(std::string("--drain-s ") + value), "--drain-s");
  }
}

}  // namespace
}  // namespace fgemma::cli_limits_test
