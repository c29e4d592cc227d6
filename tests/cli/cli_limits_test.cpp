// Issue #30, finding 7, through the CLI: --threads had no bound (2000 made 2,000 threads). It is now
// refused before any work, naming the option. `serve`'s limits are in tests/server/cli_serve_limits_test.cpp
// (the cross builds' CLI has no server). `timeout` turns a command that runs on into exit 124.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace fgemma::cli_limits_test {
namespace {

void ExpectRefused(const std::string& command, const std::string& words) {
  EXPECT_EQ(test::RefusalProblem(command, words), "");
}

TEST(CliLimits, CallThreadsAreBounded) {
  ExpectRefused("timeout 60 " + test::CliPath() + " call --model " + test::FixturePath("models/mini-bf16") +
                    " --tools " + test::FixturePath("chat/smart-home-tools.json") + " --threads 2147483647 'lights on' 2>&1",
                "--threads");
}

}  // namespace
}  // namespace fgemma::cli_limits_test
