// Stand-ins for the few libhwy symbols the kernels use, for cross builds compiled with
// HWY_COMPILE_ONLY_STATIC (one target, no dispatch, so no libhwy for the target architecture).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "hwy/targets.h"

namespace hwy {
int64_t SupportedTargets() { return HWY_STATIC_TARGET; }
void SetSupportedTargetsForTest(int64_t) {}
void Abort(const char* file, int line, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stderr, "Abort at %s:%d: ", file, line);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::abort();
}
}  // namespace hwy
