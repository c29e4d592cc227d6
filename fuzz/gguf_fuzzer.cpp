// libFuzzer harness for the GGUF parser (not part of the CMake build). Build and run with clang:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/gguf_fuzzer.cpp \
//       src/io/gguf.cpp src/util/status.cpp src/util/tensor.cpp src/util/float_types.cpp \
//       src/util/mapped_file.cpp -o /tmp/gguf_fuzzer
//   /tmp/gguf_fuzzer -max_total_time=60 CORPUS_DIR   (seed CORPUS_DIR with small .gguf files)
#include <cstddef>
#include <cstdint>

#include "io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fgemma::ParseGgufFromMemory(data, size);
  return 0;
}
