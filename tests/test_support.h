// Shared helpers for tests: fixture paths and golden loading.
#pragma once

#include <cstdint>
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
// Directory of a SYNTH.md checkpoint (config name, seed, "f32"/"bf16"), synthesized on first use
// under the build tree and reused afterwards (safe against concurrent test processes).
std::string SynthModelDir(const std::string& config, uint64_t seed, const std::string& dtype);
// Runs a shell command, returning its exit code; stdout is captured into *out when non-null.
int RunCommand(const std::string& command, std::string* out = nullptr);
// Runs a command that must be refused: "" when it exits non-zero (not 124, `timeout`'s code for one
// still running) and its output names `words`; otherwise what went wrong, with the command and output.
std::string RefusalProblem(const std::string& command, const std::string& words);

// True in AddressSanitizer builds, where each call on the mini model costs several times more.
// Tests that repeat calls to vary the scheduling (not to reach other code) repeat fewer times there
// (CI's time budget); the release build runs them in full.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace fgemma::test
