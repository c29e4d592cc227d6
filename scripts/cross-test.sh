#!/usr/bin/env bash
# Cross builds for 32-bit x86 and Arm, tested natively (i386) or under qemu-user (Arm):
#   scripts/cross-test.sh [i386|i386-sse4|armhf|armhf-noneon|aarch64 ...]   (default: i386 armhf aarch64)
# (i386-sse4 is the build scripts/test-32bit-270m.sh uses; CI tests that one to build i386 once.)
# Each builds the engine and the model, tokenizer, chat, kernels and util test binaries (aarch64:
# model, kernels and util; see `suites` below), where tests run natively also the CLI and its tests,
# with
# cmake/toolchains/<arch>.cmake (static executables; dependencies from cmake/CrossDeps.cmake;
# scripts/cross-configure.sh) in
# build/cross-<arch>, then runs the goldens that matter: tiny (every layer
# and logit), mini and the mini GGUF goldens, the tokenizer goldens, the chat rendering goldens and
# every SIMD kernel against its scalar reference (NEON on armhf/aarch64, the scalar fallback on
# armhf-noneon). Under qemu the CLI tests are left out (a test spawning the CLI would need
# binfmt_misc); on i386 everything runs natively, or under qemu-i386 like Arm (without the CLI
# tests) when the kernel cannot exec 32-bit x86 binaries.
# Needs: g++-i686-linux-gnu g++-arm-linux-gnueabihf g++-aarch64-linux-gnu qemu-user googletest
# (scripts/install-deps.sh with FGEMMA_CROSS=1). On Arm it also builds the JNI library of
# bindings/java for the target.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
# shellcheck source=scripts/cross-configure.sh
source scripts/cross-configure.sh
shared="${FGEMMA_SHARED_DIR:-$root/../shared}"
jobs="${FGEMMA_JOBS:-2}"
archs=("$@")
((${#archs[@]})) || archs=(i386 armhf aarch64)
# Under qemu: no CLI tests (no binfmt_misc to run the target CLI from the target test).
qemu_filter='-*Cli*:*CLI*'
failed=()
for arch in "${archs[@]}"; do
  case "$arch" in
    i386|i386-sse4) run=() ; filter='*' ;;  # native, unless the kernel lacks 32-bit support (below)
    armhf|armhf-noneon) run=(qemu-arm) ; filter="$qemu_filter" ;;
    aarch64) run=(qemu-aarch64) ; filter="$qemu_filter" ;;
    *) echo "unknown arch $arch" >&2; exit 2 ;;
  esac
  dir="build/cross-$arch"
  # The tokenizer and chat code has no ISA-specific path: what a target can change is the width of
  # size_t and long and the signedness of char. The host build runs them 64-bit with signed char,
  # i386 32-bit with signed char, armhf 32-bit with unsigned char; aarch64 (64-bit, unsigned char)
  # adds nothing there, so it builds and runs only the kernels, the model tests and util (thread pool).
  suites=(tokenizer chat kernels util)
  [ "$arch" = aarch64 ] && suites=(kernels util)
  echo "== $arch: configure + build ($dir)"
  cross_configure "$arch" "$dir" -DFGEMMA_SHARED_DIR="$shared" -DFGEMMA_BUILD_TESTS=ON
  # The CLI and its tests only where they run (natively).
  cli=()
  [ "${run[*]-}" = "" ] && cli=(fgemma fgemma_cli_tests)
  suite_targets=()
  for t in model "${suites[@]}"; do suite_targets+=("fgemma_${t}_tests"); done
  cmake --build "$dir" -j "$jobs" --target "${cli[@]}" "${suite_targets[@]}"
  # The JNI library an Android app ships per ABI (bindings/java), when the host has a JDK's headers:
  # it must build for the target (its behaviour is tested on the host JVM by the native build).
  if [[ "$arch" == arm* || "$arch" == aarch64 ]] && cmake --build "$dir" --target help | grep -q '^fgemma_jni:'; then
    cmake --build "$dir" -j "$jobs" --target fgemma_jni
    jni="$dir/bindings/java/libfgemma_jni.so"
    machine=$(readelf -h "$jni" | sed -n 's/^ *Machine: *//p')
    echo "== $arch: JNI library built: $jni ($machine)"
    case "$arch:$machine" in
      aarch64:AArch64|arm*:ARM) ;;
      *) echo "== $arch: $jni is for '$machine'" >&2; failed+=("$arch/jni") ;;
    esac
  fi
  if ((${#run[@]} == 0)) && ! "$dir/tests/fgemma_kernels_tests" --gtest_list_tests >/dev/null 2>&1; then
    # Kernels built without IA32 emulation (some VMs) cannot exec i386 binaries: emulate them.
    echo "== $arch: this kernel does not run 32-bit x86 executables; testing under qemu-i386"
    run=(qemu-i386)
    filter="$qemu_filter"
    cli=()
  fi
  # Each test binary is one single-threaded emulator process: they run $jobs at a time, the model
  # tests (the longest, about a minute under qemu) split in two gtest shards.
  job_names=()
  job_cmds=()
  queue() { job_names+=("$1"); job_cmds+=("$(printf '%q ' "${@:2}")"); }
  # The kernels chosen at run time from the CPU's hwcaps (kernels/cpu_features.h), each against its
  # scalar reference, and the model goldens, under CPU models that lack and have the dot product.
  # qemu-aarch64's default CPU (max, the main run below) reports dotprod, i8mm and bf16 (NEON_BF16:
  # smmla for token pairs, bfdot / bfmmla for bf16 weights on bf16 activations; the kernel tests run
  # every target below it too; forced to NEON_DOTPROD the A55 class, whose bf16 goldens take the float
  # path with the exact tolerances), cortex-a53 none of them; qemu-arm's default
  # and -cpu max run vsdot without reporting it (so the main run is NEON, and FGEMMA_ARM_TARGET
  # forces the dot product), cortex-a15 traps it. The quantized GGUF goldens (the dot-product
  # matrices, about 40 s) run where that path is new to the binary.
  goldens='*TinyGolden.Logits*:*MiniGolden*'
  extra=()
  case "$arch" in
    aarch64) extra=("-cpu cortex-a53||$goldens" "-cpu max|NEON_DOTPROD|$goldens") ;;
    armhf) extra=("-cpu cortex-a15||$goldens" "-cpu max|NEON_DOTPROD|$goldens:*GgufQuantized*") ;;
  esac
  for e in "${extra[@]}"; do
    IFS="|" read -r cpu forced goldens_here <<<"$e"
    for t in kernels model; do
      f="$filter"
      [ "$t" = model ] && f="$goldens_here:$filter"
      # shellcheck disable=SC2086  # $cpu is "-cpu <model>"
      queue "$t tests under ${run[*]} $cpu${forced:+ with FGEMMA_ARM_TARGET=$forced}" \
        env FGEMMA_ARM_TARGET="$forced" "${run[@]}" $cpu "$dir/tests/fgemma_${t}_tests" --gtest_filter="$f" --gtest_brief=1
    done
  done
  for shard in 0 1; do
    queue "model tests (shard $((shard + 1)) of 2)" env GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard \
      "${run[@]}" "$dir/tests/fgemma_model_tests" --gtest_filter="$filter" --gtest_brief=1
  done
  if ((${#cli[@]})); then
    queue "cli tests" "$dir/tests/fgemma_cli_tests" --gtest_brief=1
  fi
  for t in "${suites[@]}"; do
    queue "$t tests" "${run[@]}" "$dir/tests/fgemma_${t}_tests" --gtest_filter="$filter" --gtest_brief=1
  done
  logs="$dir/test-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  for i in "${!job_names[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    # A hang fails the stage in 5 minutes instead of eating CI's budget.
    (start=$SECONDS rc=0
     eval "timeout 300 ${job_cmds[$i]}" >"$logs/$i.log" 2>&1 || rc=$?
     echo "$rc $((SECONDS - start))" >"$logs/$i.rc") &
  done
  wait
  for i in "${!job_names[@]}"; do
    read -r rc secs <"$logs/$i.rc"
    cat "$logs/$i.log"
    if ((rc == 0)); then
      echo "== $arch: ${job_names[$i]} passed in $secs s"
    elif ((rc == 124)); then
      echo "== $arch: ${job_names[$i]} TIMED OUT after $secs s (a hang)" >&2
      failed+=("$arch/${job_names[$i]}(timeout)")
    else
      echo "== $arch: ${job_names[$i]} FAILED (exit $rc) after $secs s" >&2
      failed+=("$arch/${job_names[$i]}")
    fi
  done
done
if ((${#failed[@]})); then
  echo "cross tests FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "cross tests passed: ${archs[*]}"
