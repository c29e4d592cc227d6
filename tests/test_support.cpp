#include "test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "model/synth.h"

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

Json LoadGolden(const std::string& name) {
  auto j = ReadJsonFile(FixturePath("golden/" + name));
  if (!j.ok()) {
    ADD_FAILURE() << j.status().ToString();
    return Json();
  }
  return std::move(j).value();
}

std::string SynthModelDir(const std::string& config, uint64_t seed, const std::string& dtype) {
  namespace fs = std::filesystem;
  const std::string name = config + "-s" + std::to_string(seed) + "-" + dtype;
  const fs::path root = fs::path(FGEMMA_BINARY_DIR) / "synth";
  const fs::path dir = root / name;
  if (fs::exists(dir / "config.json")) return dir.string();
  fs::create_directories(root);
  const fs::path tmp = root / (name + ".tmp" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  auto cfg = ConfigByName(config);
  auto type = DTypeFromName(dtype);
  if (!cfg.ok() || !type.ok()) {
    ADD_FAILURE() << "bad synth request " << name;
    return dir.string();
  }
  Status st = WriteSynthCheckpoint(cfg.value(), seed, type.value(), tmp.string());
  if (!st.ok()) {
    ADD_FAILURE() << st.ToString();
    return dir.string();
  }
  std::error_code ec;
  fs::rename(tmp, dir, ec);  // another process may have won the race: then use theirs
  if (ec) fs::remove_all(tmp);
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

}  // namespace fgemma::test
