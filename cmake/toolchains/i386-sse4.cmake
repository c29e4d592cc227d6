# Cross toolchain: 32-bit x86 with SSE4.2 (+PCLMUL/AES, Highway's SSE4 target), for the 32-bit
# 270m process test (scripts/test-32bit-270m.sh), where the i386 baseline's scalar kernels would
# take minutes per prefill. Otherwise the same as i386.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/i386.cmake")
set(CMAKE_C_FLAGS_INIT "-msse4.2 -mpclmul -maes -mfpmath=sse")
set(CMAKE_CXX_FLAGS_INIT "-msse4.2 -mpclmul -maes -mfpmath=sse")
