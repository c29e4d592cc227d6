# Shared part of the cross toolchain files: each sets fgemma_triple, fgemma_processor, fgemma_flags
# and (for qemu-user) fgemma_emulator, then includes this. Used by scripts/cross-test.sh; the
# dependencies come from cmake/CrossDeps.cmake (FGEMMA_CROSS_DEPS).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${fgemma_processor})
set(CMAKE_C_COMPILER ${fgemma_triple}-gcc)
set(CMAKE_CXX_COMPILER ${fgemma_triple}-g++)
set(CMAKE_C_FLAGS_INIT "${fgemma_flags}")
set(CMAKE_CXX_FLAGS_INIT "${fgemma_flags}")
# Static executables: no target sysroot needed at run time (qemu-user or the host kernel runs them).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/${fgemma_triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(FGEMMA_CROSS_DEPS ON CACHE BOOL "" FORCE)
if(fgemma_emulator)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${fgemma_emulator})
endif()
