# Cross toolchain: armhf-noneon (arm-linux-gnueabihf-g++, Debian package g++-arm-linux-gnueabihf). ARMv7 hard-float without NEON (Debian armhf's baseline VFPv3-D16): the kernels take Highway's scalar fallback. Runs under qemu-user.
set(fgemma_triple arm-linux-gnueabihf)
set(fgemma_processor arm)
set(fgemma_flags "-mfp16-format=ieee")
set(fgemma_emulator qemu-arm)
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
