// Test helpers that use the engine (fgemma_core): goldens and synthesized checkpoints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "model/synth.h"
#include "test_support.h"

namespace fgemma::test {

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

}  // namespace fgemma::test
