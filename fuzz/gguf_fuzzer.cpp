// libFuzzer harness for the GGUF parser (header, metadata, tensor table). Built by -DFGEMMA_FUZZ=ON
// (clang); run by scripts/fuzz.sh. Seeds: fuzz/corpus/gguf/.
#include <cstddef>
#include <cstdint>

#include "io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fgemma::ParseGgufFromMemory(data, size);
  return 0;
}
