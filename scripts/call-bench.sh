#!/usr/bin/env bash
# Warm function calls on the smart-home catalog, with and without speculative drafts (issue 14):
#   scripts/call-bench.sh [--rounds N] [--threads N] [--json]
# Synthesizes the 270m once (host CLI of build/release: synth + convert to q8_0 and q4_0 GGUF, kept
# in ${TMPDIR:-/tmp}/fgemma-call-bench) and runs `fgemma bench --calls examples/smart-home/calls.jsonl`
# on each file: the 24 calls of that set (utterance + the call a real model writes, written with
# `--follow`'s hook), tool_choice auto, 2 threads by default; passes, drafted and accepted tokens per
# call, warm latency p50/p95 with and without drafts.
set -euo pipefail
cd "$(dirname "$0")/.."
host="build/release/tools/fgemma"
[ -x "$host" ] || { echo "$host missing: build the release preset's fgemma first" >&2; exit 1; }
work="${TMPDIR:-/tmp}/fgemma-call-bench"
mkdir -p "$work"
threads=2
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ! -f "$work/270m/model.safetensors" ]; then
  "$host" synth --config 270m --seed 270 --dtype bf16 --out "$work/270m"
  cp assets/functiongemma/tokenizer.json "$work/270m/"
fi
for type in q8_0 q4_0; do
  [ -f "$work/270m-$type.gguf" ] || "$host" convert --model "$work/270m" --type "$type" --out "$work/270m-$type.gguf" >/dev/null
  echo "== 270m $type, $threads threads"
  "$host" bench --model "$work/270m-$type.gguf" --threads "$threads" --calls examples/smart-home/calls.jsonl \
    --tools examples/smart-home/tools.json "${args[@]}"
done
