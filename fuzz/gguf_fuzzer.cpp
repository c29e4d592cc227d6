// libFuzzer harness for the GGUF parser (header, metadata, tensor table) and, for a file that
// parses, the model configuration read from it (ConfigFromGguf and ModelConfig::Validate: nonsense
// metadata must be an error, never an exception or a huge allocation). Built by -DFGEMMA_FUZZ=ON
// (clang); run by scripts/fuzz.sh. Seeds: fuzz/corpus/gguf/.
#include <cstddef>
#include <cstdint>

#include "io/gguf.h"
#include "model/model_gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fgemma::ParseGgufFromMemory(data, size);
  auto file = fgemma::GgufFile::FromMemory(data, size, "fuzz");
  if (file.ok()) (void)fgemma::ConfigFromGguf(file.value());
  return 0;
}
