#!/usr/bin/env bash
# Guest instructions per token on aarch64, fgemma beside llama.cpp, on the same GGUF files
# (issue 34, "aarch64 guest instructions per token <= llama.cpp's aarch64 build on the same file"):
#   scripts/arm-cost-llama.sh LLAMA_BENCH_AARCH64 FILE.gguf...
# Both engines run with one thread under `qemu-aarch64 -cpu max` (dot product and i8mm) with the
# instruction-count plugin of ../shared/tools/insn_count.c, and each figure is the difference of two
# runs of one program that differ only in the work measured, so loading, set-up and exit cancel:
#   decode:  20 minus 4 decode steps after a context of 64, divided by 16 (the steps at positions
#            68..83; every step computes the head);
#     fgemma:    bench --prefill 16 --repetitions 1 --decode-contexts 64 --decode-steps 20|4 --decode-zero-fill
#     llama.cpp: llama-bench -t 1 -r 1 --no-warmup -p 0 -d 64 -n 20|4
#   prefill: a 48-token prompt minus a 16-token one, divided by 32 (from an empty context; each run
#            computes the head of its last token only, so the head cancels);
#     fgemma:    bench --prefill 48|16 --repetitions 1 --decode-contexts 64 --decode-steps 4 --decode-zero-fill
#     llama.cpp: llama-bench -t 1 -r 1 --no-warmup -p 48|16 -n 0
# llama-bench sizes its context to prompt + generated + depth tokens rounded up to 256, so its runs
# share one context size; fgemma's differ by 16 positions between the two decode runs (69 vs 85),
# which costs no counted work beyond the zeroing of those KV rows. Everything else is llama-bench's
# defaults (F16 KV cache, flash attention auto, ubatch 512, CPU repacking of the weights that have
# a repacked layout). Identical runs of either engine agree to within a few thousand instructions.
#
# The peer is built outside this repository and nothing of it is kept here; this script builds and
# downloads nothing of it. The figures in docs were made with llama.cpp as vendored in PyPI's
# llama-cpp-python 0.3.36 sdist (vendor/llama.cpp, ggml 0.25.3), cross-built CPU-only and static:
#   cmake -S vendor/llama.cpp -B llama.cpp-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=<a toolchain file for
#     aarch64-linux-gnu-gcc/g++ with -static> -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF
#     -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+i8mm -DGGML_OPENMP=OFF -DBUILD_SHARED_LIBS=OFF
#     -DGGML_BACKEND_DL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
#   cmake --build llama.cpp-aarch64 --target llama-bench
# (llama.cpp chooses its kernels at compile time there: the dotprod and i8mm paths, as fgemma's
# runtime dispatch does on -cpu max.) The files: docs/real-model.md.
#
# env: FGEMMA_SHARED_DIR (../shared), FGEMMA_JOBS (2), QEMU_CPU (max), FGEMMA_ARM_TARGET (unset: what
#      fgemma's dispatch picks on QEMU_CPU), PROMPTS ("16 48"), STEPS ("4 20"), DEPTH (64)
# Prints a Markdown table; the raw counts go to stderr.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LLAMA_BENCH_AARCH64 FILE.gguf..." >&2; exit 2; }
start="$PWD"
abs() { [[ "$1" == /* ]] && echo "$1" || echo "$start/$1"; }
peer="$(abs "$1")"
shift
files=()
for f in "$@"; do
  files+=("$(abs "$f")")
  [ -f "${files[-1]}" ] || { echo "$f missing" >&2; exit 1; }
done
[ -x "$peer" ] || { echo "$peer is not an executable llama-bench" >&2; exit 1; }
if command -v file >/dev/null; then
  file -L "$peer" | grep -q aarch64 || { echo "$peer is not an aarch64 executable" >&2; exit 1; }
fi
cd "$(dirname "$0")/.."
root="$PWD"
shared="${FGEMMA_SHARED_DIR:-$root/../shared}"
jobs="${FGEMMA_JOBS:-2}"
cpu="${QEMU_CPU:-max}"
read -r p_short p_long <<<"${PROMPTS:-16 48}"
read -r s_short s_long <<<"${STEPS:-4 20}"
depth="${DEPTH:-64}"
work="${TMPDIR:-/tmp}/fgemma-arm-cost"
mkdir -p "$work"
plugin="$work/insn_count.so"
[ -f "$plugin" ] || cc -O2 -shared -fPIC -o "$plugin" "$shared/tools/insn_count.c"
# fgemma's aarch64 CLI, as scripts/arm-cost.sh builds it.
dir=build/cross-aarch64
[ -f "$dir/build.ninja" ] || cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DFGEMMA_SHARED_DIR="$shared" -DFGEMMA_BUILD_TESTS=OFF -DFGEMMA_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j "$jobs" --target fgemma >/dev/null
# run LOG PROGRAM ARGS...: the guest instructions of one run (its output in LOG); fails loudly.
run() {
  local log=$1
  shift
  local n
  n=$(qemu-aarch64 -cpu "$cpu" -plugin "$plugin" "$@" 2>&1 >"$log" | sed -n 's/^insn_count: total //p')
  [ -n "$n" ] || { echo "no count from: $* (output in $log)" >&2; exit 1; }
  echo "$n"
}
fgemma() {  # fgemma FILE PREFILL STEPS
  FGEMMA_ARM_TARGET="${FGEMMA_ARM_TARGET:-}" run "$work/fgemma.out" "$dir/tools/fgemma" bench --model "$1" --threads 1 \
    --prefill "$2" --repetitions 1 --decode-contexts "$depth" --decode-steps "$3" --decode-zero-fill
}
llama() {  # llama FILE ARGS...
  local f=$1
  shift
  run "$work/llama.out" "$peer" -m "$f" -t 1 -r 1 --no-warmup "$@"
}
echo "qemu-aarch64 -cpu $cpu, one thread; decode: ($s_long - $s_short steps) at context $depth, prefill: ($p_long - $p_short prompt tokens)"
echo
echo "| file | fgemma decode insn/token | llama.cpp decode insn/token | ratio | fgemma prefill insn/token | llama.cpp prefill | ratio |"
echo "|---|---|---|---|---|---|---|"
nd=$((s_long - s_short))
np=$((p_long - p_short))
for f in "${files[@]}"; do
  fb=$(fgemma "$f" "$p_short" "$s_short")
  kernels=$(sed -n 's/^threads.*kernels //p' "$work/fgemma.out")
  fd=$(fgemma "$f" "$p_short" "$s_long")
  fp=$(fgemma "$f" "$p_long" "$s_short")
  ld0=$(llama "$f" -p 0 -d "$depth" -n "$s_short")
  ld1=$(llama "$f" -p 0 -d "$depth" -n "$s_long")
  lp0=$(llama "$f" -p "$p_short" -n 0)
  lp1=$(llama "$f" -p "$p_long" -n 0)
  echo "$(basename "$f"): fgemma ($kernels) base $fb decode $fd prefill $fp; llama.cpp decode $ld0 $ld1 prefill $lp0 $lp1" >&2
  fdec=$(awk -v a="$fd" -v b="$fb" -v n="$nd" 'BEGIN { print (a - b) / n }')
  ldec=$(awk -v a="$ld1" -v b="$ld0" -v n="$nd" 'BEGIN { print (a - b) / n }')
  fpre=$(awk -v a="$fp" -v b="$fb" -v n="$np" 'BEGIN { print (a - b) / n }')
  lpre=$(awk -v a="$lp1" -v b="$lp0" -v n="$np" 'BEGIN { print (a - b) / n }')
  awk -v name="$(basename "$f")" -v fd="$fdec" -v ld="$ldec" -v fp="$fpre" -v lp="$lpre" 'BEGIN {
    printf "| %s | %.1fM | %.1fM | %.2f | %.1fM | %.1fM | %.2f |\n", name, fd / 1e6, ld / 1e6, fd / ld, fp / 1e6, lp / 1e6, fp / lp }'
done
