#!/usr/bin/env bash
# Builds the kernel tests for aarch64 and armv7 (NEON) and runs them under qemu-user.
# Needs: g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user (Debian packages) and the
# googletest sources (/usr/src/googletest). Highway is compiled for its static target only
# (HWY_COMPILE_ONLY_STATIC), so no libhwy for the target architecture is needed.
# Usage: tests/kernels/cross/run.sh [aarch64|aarch64-dotprod|armv7 ...]   (default: all three)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="${TMPDIR:-/tmp}/fgemma-cross"
mkdir -p "$out/include"
cp -r /usr/include/hwy "$out/include/"  # arch-independent headers, without the host's other headers
gtest=/usr/src/googletest/googletest
for arch in ${@:-aarch64 aarch64-dotprod armv7}; do
  case "$arch" in
    aarch64) cxx=aarch64-linux-gnu-g++; qemu=qemu-aarch64; flags="" ;;
    aarch64-dotprod) cxx=aarch64-linux-gnu-g++; qemu=qemu-aarch64; flags="-march=armv8.2-a+dotprod" ;;
    armv7) cxx=arm-linux-gnueabihf-g++; qemu=qemu-arm; flags="-mfpu=neon-vfpv4 -mfp16-format=ieee" ;;
    *) echo "unknown arch $arch" >&2; exit 2 ;;
  esac
  dir="$out/$arch"
  mkdir -p "$dir"
  common=(-std=c++20 -O2 $flags -DHWY_COMPILE_ONLY_STATIC -I"$out/include" -I"$root/src" -I"$root/tests"
          -I"$gtest/include" -I"$gtest")
  if [ ! -f "$dir/gtest.a" ]; then  # gtest built once per architecture
    $cxx "${common[@]}" -c "$gtest/src/gtest-all.cc" -o "$dir/gtest-all.o"
    $cxx "${common[@]}" -c "$gtest/src/gtest_main.cc" -o "$dir/gtest_main.o"
    ar rcs "$dir/gtest.a" "$dir/gtest-all.o" "$dir/gtest_main.o"
  fi
  $cxx "${common[@]}" -static -pthread -o "$dir/kernels_tests" \
    "$root"/src/kernels/*.cpp "$root"/src/util/tensor.cpp "$root"/src/util/float_types.cpp \
    "$root"/src/util/status.cpp "$root"/tests/kernels/*_test.cpp "$root/cmake/hwy_static_stubs.cpp" \
    "$dir/gtest.a"
  echo "== $arch"
  $qemu "$dir/kernels_tests"
done
