// Shared helpers for tests: fixture paths and golden loading.
#pragma once

#include <string>

#include "util/json.h"

namespace fgemma::test {

// ../shared/fixtures/<relative>
std::string FixturePath(const std::string& relative);
// Path of the built `fgemma` CLI.
std::string CliPath();
// A fresh, empty temporary directory (removed by the OS's tmp cleanup, named after the test).
std::string TempDir();
// Loads a golden JSON file under fixtures/golden; aborts the test (ADD_FAILURE) when missing.
Json LoadGolden(const std::string& name);
// Runs a shell command, returning its exit code; stdout is captured into *out when non-null.
int RunCommand(const std::string& command, std::string* out = nullptr);

}  // namespace fgemma::test
