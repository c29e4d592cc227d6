# Cross toolchain: armhf (arm-linux-gnueabihf-g++, Debian package g++-arm-linux-gnueabihf). ARMv7 hard-float with NEON (Highway's static NEON target). Runs under qemu-user.
set(fgemma_triple arm-linux-gnueabihf)
set(fgemma_processor arm)
set(fgemma_flags "-mfpu=neon-vfpv4 -mfp16-format=ieee")
set(fgemma_emulator qemu-arm)
include("${CMAKE_CURRENT_LIST_DIR}/common.cmake")
