#!/usr/bin/env bash
# 32-bit process test: a static i386 fgemma (SSE4 kernels, cmake/toolchains/i386-sse4.cmake) in an
# address space limited to 3 GiB (ulimit -v 3145728) converts the synthesized 270m to q8_0 and loads
# it (272 MiB mapped), prefills 8,192 tokens, and decodes 4 tokens at a context of 32,760 (KV cache sized for
# 32,765 positions). The decode context is reached with `bench --decode-zero-fill` (zero keys and
# values, nothing computed; the decode step's attention and memory are those of a real 32k context)
# because a real 32k prefill takes too long for CI. Prints bench's JSON (peak RSS, KV cache by layer
# type). Then checks that a model file over 2 GiB is refused with a clear error on 32-bit.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
dir="build/cross-i386-sse4"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/i386-sse4.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFGEMMA_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$dir" -j "${FGEMMA_JOBS:-2}" --target fgemma
cli="$dir/tools/fgemma"
file "$cli" | grep -q "ELF 32-bit" || { echo "$cli is not a 32-bit executable" >&2; exit 1; }
work="${TMPDIR:-/tmp}/fgemma-32bit-270m"
mkdir -p "$work"
if [ ! -f "$work/270m/model.safetensors" ]; then
  "$cli" synth --config 270m --seed 270 --dtype bf16 --out "$work/270m"
  cp assets/functiongemma/tokenizer.json "$work/270m/"
fi
# q8_0, the format users ship to phones (and 3-4x faster than bf16 on SSE4's integer path), converted
# by the 32-bit CLI itself in the same address-space limit.
echo "== 270m bf16 -> q8_0 GGUF and bench in a 3 GiB address space: prefill 8192, decode at 32760"
(
  ulimit -v 3145728
  [ -f "$work/270m-q8_0.gguf" ] || "$cli" convert --model "$work/270m" --type q8_0 --out "$work/270m-q8_0.gguf"
  "$cli" bench --model "$work/270m-q8_0.gguf" --threads "${FGEMMA_JOBS:-2}" --prefill 8192 --decode-contexts 32760 \
    --decode-steps 4 --decode-zero-fill --json
) | tee "$work/bench.json"
grep -q '"metric":"decode_ms_per_token","n":32760' "$work/bench.json"

echo "== a model file over 2 GiB is refused on 32-bit"
mkdir -p "$work/big"
cp "$work/270m/config.json" "$work/big/"
truncate -s 2500M "$work/big/model.safetensors"  # sparse: no disk space used
if out="$("$cli" bench --model "$work/big" 2>&1)"; then
  echo "a 2.5 GiB model loaded in a 32-bit process?" >&2
  exit 1
fi
echo "$out"
echo "$out" | grep -q "cannot be mapped in this process's address space"
rm -f "$work/big/model.safetensors"
echo "32-bit 270m test passed"
