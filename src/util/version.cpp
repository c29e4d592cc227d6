#include "util/version.h"

#ifndef FGEMMA_VERSION_STRING
#error "FGEMMA_VERSION_STRING comes from CMake's project(VERSION) (src/CMakeLists.txt)"
#endif

namespace fgemma {

const char* VersionString() { return FGEMMA_VERSION_STRING; }

}  // namespace fgemma
