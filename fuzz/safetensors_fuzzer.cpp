// libFuzzer harness for the safetensors header validator (JSON header, dtype/shape/offset checks
// against the file size). Seeds: fuzz/corpus/safetensors/.
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fgemma::ValidateSafetensorsImage(data, size, "fuzz.safetensors");
  return 0;
}
