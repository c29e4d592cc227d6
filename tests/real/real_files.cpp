#include "real_files.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "test_support.h"
#include "util/hash.h"
#include "util/ids.h"
#include "util/json.h"
#include "util/mapped_file.h"

namespace fgemma::test {

std::string RealDataPath(const std::string& name) { return std::string(FGEMMA_SOURCE_DIR) + "/tests/data/real/" + name; }

std::string RealCacheDir() {
  std::string cache;
  if (const char* d = std::getenv("FGEMMA_CACHE_DIR"); d && *d) {
    cache = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    cache = std::string(x) + "/fgemma";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    cache = std::string(h) + "/.cache/fgemma";
  } else {
    cache = "/tmp/fgemma-cache";
  }
  return cache + "/real";
}

int RunDemoOnTheRealCache(std::string* out) {
  const std::string cache = TempDir();
  std::filesystem::create_directory_symlink(RealCacheDir(), cache + "/real");
  return RunCommand("FGEMMA_CACHE_DIR=" + cache + " " + CliPath() + " demo --threads 2 2>&1", out);
}

std::vector<RealFile> RealFiles() {
  std::vector<RealFile> out;
  auto j = ReadJsonFile(RealDataPath("manifest.json"));
  if (!j.ok()) return out;  // the test that reads the manifest itself reports it
  for (const auto& f : (*j)["files"]) {
    out.push_back(RealFile{f.at("type").get<std::string>(), f.at("file").get<std::string>(),
                           f.at("made").get<std::string>(), f.at("size").get<uint64_t>(),
                           f.at("hash64").get<std::string>(), f.at("golden").get<std::string>(),
                           f.at("min_agreement").get<double>()});
  }
  return out;
}

std::vector<int32_t> RealTextIds() {
  auto ids = ReadIdsFile(RealDataPath("english.ids.json"));
  return ids.ok() ? std::move(ids).value() : std::vector<int32_t>{};
}

std::string FileHash64(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return "";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Hash64(file->data(), file->size())));
  return hex;
}

Result<Top5Golden> ReadTop5Golden(const std::string& path) {
  FGEMMA_TRY(MappedFile file, MappedFile::Open(path));
  const uint8_t* p = file.data();
  const size_t n = file.size();
  auto u32 = [&](size_t at) {
    return static_cast<uint32_t>(p[at]) | static_cast<uint32_t>(p[at + 1]) << 8 | static_cast<uint32_t>(p[at + 2]) << 16 |
           static_cast<uint32_t>(p[at + 3]) << 24;
  };
  if (n < 20 || std::memcmp(p, "FGRLOGT1", 8) != 0) return InvalidArgument(path + ": not a top-5 golden (magic FGRLOGT1)");
  const uint32_t count = u32(8), k = u32(12), scale = u32(16);
  constexpr size_t kRecord = 5 * 3 + 5 * 2;
  if (k != 5 || scale == 0) return InvalidArgument(path + ": offset 12: expected k=5 and a non-zero scale");
  if (n != 20 + static_cast<size_t>(count) * kRecord)
    return InvalidArgument(path + ": " + std::to_string(n) + " bytes, expected " + std::to_string(20 + count * kRecord) +
                           " for " + std::to_string(count) + " positions");
  Top5Golden g;
  g.positions.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* r = p + 20 + i * kRecord;
    for (int j = 0; j < 5; ++j) {
      g.positions[i].ids[j] = static_cast<int32_t>(r[3 * j] | r[3 * j + 1] << 8 | r[3 * j + 2] << 16);
      const auto v = static_cast<int16_t>(static_cast<uint16_t>(r[15 + 2 * j] | r[15 + 2 * j + 1] << 8));
      g.positions[i].logits[j] = static_cast<float>(v) / static_cast<float>(scale);
    }
  }
  return g;
}

}  // namespace fgemma::test
