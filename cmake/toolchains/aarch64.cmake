# Cross toolchain: aarch64 (aarch64-linux-gnu-g++, Debian package g++-aarch64-linux-gnu). ARMv8-A (NEON always present). Runs under qemu-user.
set(fgemma_triple aarch64-linux-gnu)
set(fgemma_processor aarch64)
set(fgemma_flags "")
set(fgemma_emulator qemu-aarch64)
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
