# Cross toolchain: 32-bit x86 with SSE4.2 (+PCLMUL/AES, Highway's SSE4 target), for the 32-bit
# 270m process test (scripts/test-32bit-270m.sh), where the i386 baseline's scalar kernels are
# slower still. Otherwise the same as i386.cmake.
set(fgemma_triple i686-linux-gnu)
set(fgemma_processor i686)
set(fgemma_flags "-msse4.2 -mpclmul -maes -mfpmath=sse")
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
