#!/usr/bin/env bash
# Guest instructions per token of fgemma on Arm, by CPU model and the kernels dispatched there:
#   scripts/arm-cost.sh            (needs the cross toolchains and qemu-user of scripts/cross-test.sh)
# Builds the fgemma CLI for aarch64 and armhf (build/cross-<arch>), synthesizes the 270m (host CLI of
# build/release: synth + convert to q8_0 and q4_0 GGUF), and runs `fgemma bench` with one thread under
# qemu-user with the instruction-count plugin of ../shared/tools/insn_count.c. Load and set-up cancel by
# subtracting two runs that differ only in the work measured:
#   decode:  --decode-steps 20 minus 4 (context 64, zero-filled), divided by 16
#   prefill: --repetitions 2 minus 1 of a 32-token prefill, divided by 32
#   prep:    the weight preparation at load (panels, expanded rows): bench --load-only minus the same
#            with FGEMMA_INTERLEAVE=0 (the stored layout, nothing prepared), in G instructions
# Prints a Markdown table (docs/design/arm.md).
# FGEMMA_ARM_COST_FILES="A.gguf B.gguf ..." counts those files instead of the synthesized 270m (e.g. the
# real model's, docs/real-model.md): a decode and a prefill column each, named by the file; nothing is
# synthesized and no host CLI is needed. Unset, the script does what it did before.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
shared="${FGEMMA_SHARED_DIR:-$root/../shared}"
jobs="${FGEMMA_JOBS:-2}"
work="${TMPDIR:-/tmp}/fgemma-arm-cost"
mkdir -p "$work"
host="build/release/tools/fgemma"
files=(${FGEMMA_ARM_COST_FILES:-})
for i in "${!files[@]}"; do  # relative to where the script was started
  [[ "${files[$i]}" == /* ]] || files[$i]="$OLDPWD/${files[$i]}"
  [ -f "${files[$i]}" ] || { echo "${files[$i]} (FGEMMA_ARM_COST_FILES) missing" >&2; exit 1; }
done
((${#files[@]})) || [ -x "$host" ] || { echo "$host missing: build the release preset's fgemma first" >&2; exit 1; }
plugin="$work/insn_count.so"
[ -f "$plugin" ] || cc -O2 -shared -fPIC -o "$plugin" "$shared/tools/insn_count.c"
# arch|cpu|FGEMMA_ARM_TARGET: qemu-arm -cpu max runs vsdot without reporting it, so it is forced.
# aarch64 max reports dotprod and i8mm (NEON_I8MM); forced to NEON_DOTPROD it stands for the
# Cortex-A55 class (dot product without i8mm).
# FGEMMA_ARM_COST_CONFIGS replaces the list (e.g. add "aarch64|max|NEON" for the baseline on max).
configs=(${FGEMMA_ARM_COST_CONFIGS:-"aarch64|cortex-a53|" "aarch64|max|" "aarch64|max|NEON_DOTPROD" "armhf|cortex-a15|" "armhf|max|NEON_DOTPROD"})
# Only the builds the configurations run.
for arch in aarch64 armhf; do
  printf '%s\n' "${configs[@]}" | grep -q "^$arch|" || continue
  dir="build/cross-$arch"
  [ -f "$dir/build.ninja" ] || cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$arch.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFGEMMA_SHARED_DIR="$shared" -DFGEMMA_BUILD_TESTS=OFF -DFGEMMA_BUILD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$jobs" --target fgemma >/dev/null
done
# types: the column labels; models: the GGUF file of each.
types=()
models=()
if ((${#files[@]})); then
  for f in "${files[@]}"; do
    types+=("$(basename "$f" .gguf)")
    models+=("$f")
  done
else
  if [ ! -f "$work/270m/model.safetensors" ]; then
    "$host" synth --config 270m --seed 270 --dtype bf16 --out "$work/270m"
    cp assets/functiongemma/tokenizer.json "$work/270m/"
  fi
  # FGEMMA_ARM_COST_TYPES narrows the weight types (e.g. "q4_0"; default both, the columns of docs/design/arm.md).
  types=(${FGEMMA_ARM_COST_TYPES:-q8_0 q4_0})
  for type in "${types[@]}"; do
    [ -f "$work/270m-$type.gguf" ] || "$host" convert --model "$work/270m" --type "$type" --out "$work/270m-$type.gguf" >/dev/null
    models+=("$work/270m-$type.gguf")
  done
fi
# count ARCH CPU FORCED MODEL ARGS...: guest instructions of a bench run. With --threads 1 the whole
# run is one guest thread (the weights are repacked on the loading thread too), so the plugin's
# counter, which is not atomic across threads, is exact: identical runs agree to within a few
# hundred instructions. (Before, the two threads repacking at load lost counts at random, which made
# decode figures move by up to ~25M per token between invocations.)
count() {
  count_once "$@"
}
count_once() {
  local arch=$1 cpu=$2 forced=$3 model=$4
  shift 4
  local emu=qemu-aarch64
  [ "$arch" = armhf ] && emu=qemu-arm
  FGEMMA_ARM_TARGET="$forced" "$emu" -cpu "$cpu" -plugin "$plugin" "build/cross-$arch/tools/fgemma" bench \
    --model "$model" --threads 1 "$@" 2>&1 >"$work/last.out" | sed -n 's/^insn_count: total //p'
}
header="| build | CPU model (qemu-user) | kernels |"
rule="|---|---|---|"
for type in "${types[@]}"; do
  header+=" $type decode | $type prefill | $type prep |"
  rule+="---|---|---|"
done
echo "$header"
echo "$rule"
for config in "${configs[@]}"; do
  IFS='|' read -r arch cpu forced <<<"$config"
  cells=()
  kernels=""
  for i in "${!types[@]}"; do
    model=${models[$i]}
    base=$(count "$arch" "$cpu" "$forced" "$model" --prefill 32 --repetitions 1 --decode-contexts 64 --decode-steps 4 --decode-zero-fill)
    kernels=$(sed -n 's/^threads.*kernels //p' "$work/last.out")
    decode=$(count "$arch" "$cpu" "$forced" "$model" --prefill 32 --repetitions 1 --decode-contexts 64 --decode-steps 20 --decode-zero-fill)
    prefill=$(count "$arch" "$cpu" "$forced" "$model" --prefill 32 --repetitions 2 --decode-contexts 64 --decode-steps 4 --decode-zero-fill)
    cells+=("$(awk -v a="$decode" -v b="$base" 'BEGIN { printf "%.1fM", (a - b) / 16 / 1e6 }')")
    cells+=("$(awk -v a="$prefill" -v b="$base" 'BEGIN { printf "%.1fM", (a - b) / 32 / 1e6 }')")
    loaded=$(count "$arch" "$cpu" "$forced" "$model" --load-only)
    stored=$(FGEMMA_INTERLEAVE=0 count "$arch" "$cpu" "$forced" "$model" --load-only)
    cells+=("$(awk -v a="$loaded" -v b="$stored" 'BEGIN { printf "%.2fG", (a - b) / 1e9 }')")
  done
  row="| $arch | $cpu${forced:+ (FGEMMA_ARM_TARGET=$forced)} | $kernels |"
  for cell in "${cells[@]}"; do row+=" $cell |"; done
  echo "$row"
done
