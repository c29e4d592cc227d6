#!/usr/bin/env bash
# Installs the Debian packages fgemma builds and tests with. Idempotent; needs root (or sudo).
set -euo pipefail
packages=(cmake ninja-build g++ clang-14 libclang-rt-14-dev  # clang: the asan preset and the fuzzers
          libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev nlohmann-json3-dev
          libcli11-dev libcpp-httplib-dev python3 pkg-config
          python3-pytest python3-pip default-jdk-headless junit4  # the bindings (bindings/)
          maven)  # fetches the Kotlin compiler from Maven Central (below)
# FGEMMA_CROSS=1 / FGEMMA_VALGRIND=1 (as scripts/test.sh): the cross stage (cross compilers that
# coexist in Debian 12 -- not g++-multilib, which removes them --, qemu-user, googletest sources) and
# the valgrind stage.
if [ "${FGEMMA_CROSS:-0}" = 1 ]; then
  # The C libraries of the cross compilers are only Recommends (installed with --no-install-recommends
  # below), so they are named here.
  packages+=(g++-i686-linux-gnu g++-arm-linux-gnueabihf g++-aarch64-linux-gnu qemu-user googletest
             libc6-dev-i386-cross libc6-dev-armhf-cross libc6-dev-arm64-cross)
fi
if [ "${FGEMMA_VALGRIND:-0}" = 1 ]; then
  packages+=(valgrind googletest)  # googletest: sources for the valgrind build
fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The Kotlin compiler, from Maven Central (Debian 12 packages only Kotlin 1.3): the Kotlin example of
# docs/java-kotlin.md is compiled and run by CTest when it is in the cache (~27 s and 63 MB once,
# then a no-op). FGEMMA_KOTLIN=0 skips it.
if [ "${FGEMMA_KOTLIN:-1}" = 1 ]; then
  "$(dirname "$0")/fetch-kotlinc.sh"
fi
