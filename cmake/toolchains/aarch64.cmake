# Cross toolchain: aarch64 (aarch64-linux-gnu-g++, Debian package g++-aarch64-linux-gnu). ARMv8-A (NEON always present). Runs under qemu-user.
# Used by scripts/cross-test.sh; dependencies come from cmake/CrossDeps.cmake (FGEMMA_CROSS_DEPS).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_FLAGS_INIT "")
set(CMAKE_CXX_FLAGS_INIT "")
# Static executables: no target sysroot needed at run time (qemu-user or the host kernel runs them).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(FGEMMA_CROSS_DEPS ON CACHE BOOL "" FORCE)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
