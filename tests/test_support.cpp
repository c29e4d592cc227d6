// The helpers that need nothing of the engine (also linked into the test of the C++ API over
// libfgemma.so); test_support_core.cpp holds those that do.
#include "test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace fgemma::test {

std::string FixturePath(const std::string& relative) {
  return std::string(FGEMMA_SHARED_DIR) + "/fixtures/" + relative;
}

std::string CliPath() { return FGEMMA_CLI_PATH; }

std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "fgemma";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  auto dir = std::filesystem::temp_directory_path() / ("fgemma-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    if (out) out->append(buf.data(), n);
  }
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string RefusalProblem(const std::string& command, const std::string& words) {
  std::string out;
  const int code = RunCommand(command, &out);
  if (code == 0) return "accepted: " + command + "\n" + out;
  if (code == 124) return "still running after its timeout: " + command + "\n" + out;
  if (out.find(words) == std::string::npos) return "refused without naming " + words + ": " + command + "\n" + out;
  return "";
}

}  // namespace fgemma::test
