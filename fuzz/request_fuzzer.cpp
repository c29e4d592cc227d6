// libFuzzer harness for chat request JSON (both request formats, auto-detected and forced).
// Seeds: fuzz/corpus/request/.
#include <cstddef>
#include <cstdint>

#include "chat/request.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the format, the rest is the body.
  const auto format = static_cast<fgemma::RequestFormat>(data[0] % 3);
  (void)fgemma::ParseChatRequestText(fgemma::fuzz::AsText(data + 1, size - 1), "fuzz", format);
  return 0;
}
