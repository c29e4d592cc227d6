// Helpers shared by the libFuzzer harnesses (fuzz/*_fuzzer.cpp).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace fgemma::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// A per-process scratch directory for parsers that read files (removed files are rewritten each run).
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fgemma-fuzz-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    return templ;
  }();
  return dir;
}

inline void WriteFileOrDie(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

}  // namespace fgemma::fuzz
