#!/usr/bin/env bash
# Sourced by scripts/cross-test.sh and scripts/test-32bit-270m.sh: configures one cross build.
#   cross_configure <arch> <build dir> [cmake -D options...]
# Static executables for cmake/toolchains/<arch>.cmake, Release (-O3), the test binaries' own code
# at -O1 as in the release preset. Not -O1 for the library outside the kernels as the sanitizer
# presets do: under qemu the model tests then ran twice as long (aarch64 229 s instead of 117),
# more than the builds saved (the cross stage took 19.4 min instead of 16.4).
cross_configure() {
  local arch="$1" dir="$2"
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/$arch.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFGEMMA_BUILD_BENCH=OFF -DFGEMMA_TEST_FLAGS=-O1 "$@" >/dev/null
}
