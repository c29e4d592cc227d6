# Cross toolchain: armhf-noneon (arm-linux-gnueabihf-g++, Debian package g++-arm-linux-gnueabihf). ARMv7 hard-float without NEON (Debian armhf's baseline VFPv3-D16): the kernels take Highway's scalar (EMU128) fallback. Runs under qemu-user.
# Used by scripts/cross-test.sh; dependencies come from cmake/CrossDeps.cmake (FGEMMA_CROSS_DEPS).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_C_FLAGS_INIT "-mfp16-format=ieee")
set(CMAKE_CXX_FLAGS_INIT "-mfp16-format=ieee")
# Static executables: no target sysroot needed at run time (qemu-user or the host kernel runs them).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(FGEMMA_CROSS_DEPS ON CACHE BOOL "" FORCE)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm)
