# Cross toolchain: i386 (i686-linux-gnu-g++, Debian package g++-i686-linux-gnu). Runs natively on an x86-64 kernel (static binaries). -msse2 -mfpmath=sse: SSE2 scalar float math (every x86 CPU since 2003), so results do not depend on x87 excess precision.
# Used by scripts/cross-test.sh; dependencies come from cmake/CrossDeps.cmake (FGEMMA_CROSS_DEPS).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER i686-linux-gnu-g++)
set(CMAKE_C_FLAGS_INIT "-msse2 -mfpmath=sse")
set(CMAKE_CXX_FLAGS_INIT "-msse2 -mfpmath=sse")
# Static executables: no target sysroot needed at run time (qemu-user or the host kernel runs them).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(FGEMMA_CROSS_DEPS ON CACHE BOOL "" FORCE)
