#!/usr/bin/env bash
# Speed beside llama.cpp on the same GGUF files, interleaved: for each round and file, `fgemma
# bench` (prefill PREFILL tokens, decode at a context of DECODE_CTX) then `llama-bench` (pp PREFILL,
# tg DECODE_CTX: it generates from an empty context, so its average context is half of fgemma's), same
# thread count. Prints a markdown table with the ratios and decode's share of the read roofline
# (mapped weight bytes a token / one thread's read bandwidth from bench/peak_bench's peak/read: the
# 270m's head is its tied embedding, so every weight byte is read once a token).
#
# usage: scripts/compare-llama.sh LLAMA_BENCH FILE.gguf...   (build/release first)
#   env: ROUNDS (2), THREADS (2), PREFILL (512), DECODE_CTX (64), FGEMMA (build/release/tools/fgemma),
#        READ_GBPS (measured by peak_bench when unset)
# The peer is built outside this repository (docs/real-model.md says how); nothing of it is kept here.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 LLAMA_BENCH FILE.gguf..." >&2; exit 2; }
llama_bench="$1"
shift
fgemma="${FGEMMA:-build/release/tools/fgemma}"
rounds="${ROUNDS:-2}" threads="${THREADS:-2}" prefill="${PREFILL:-512}" ctx="${DECODE_CTX:-64}"
[ -x "$fgemma" ] || { echo "$fgemma missing: cmake --workflow --preset release" >&2; exit 1; }
[ -x "$llama_bench" ] || { echo "$llama_bench is not an executable llama-bench" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if [ -z "${READ_GBPS:-}" ]; then
  peak=build/release/bench/peak_bench
  [ -x "$peak" ] || { echo "$peak missing (or set READ_GBPS)" >&2; exit 1; }
  "$peak" --benchmark_filter='peak/read' --benchmark_format=json >"$out/read.json" 2>/dev/null
  READ_GBPS="$(python3 -c 'import json,sys; print(max(b["bytes_per_second"] for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration") / 1e9)' "$out/read.json")"
fi
for r in $(seq "$rounds"); do
  for f in "$@"; do
    echo "round $r: $(basename "$f")" >&2
    "$fgemma" bench --model "$f" --threads "$threads" --prefill "$prefill" --decode-contexts "$ctx" --json \
      >"$out/fgemma-$r-$(basename "$f").json"
    "$llama_bench" -m "$f" -t "$threads" -p "$prefill" -n "$ctx" -r 1 -o json >"$out/llama-$r-$(basename "$f").json" 2>/dev/null
  done
done
python3 - "$out" "$rounds" "$READ_GBPS" "$@" <<'EOF'
import json, os, statistics, sys
out, rounds, gbps, files = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
print(f"one-thread read bandwidth {gbps:.2f} GB/s; medians of {rounds} interleaved rounds")
print("| file | prefill fgemma / llama.cpp tok/s | ratio | decode fgemma / llama.cpp tok/s | ratio | fgemma decode % of roofline |")
print("|---|---|---|---|---|---|")
for f in files:
    name = os.path.basename(f)
    fp, fd, lp, ld, mib = [], [], [], [], 0.0
    for r in range(1, rounds + 1):
        j = json.load(open(f"{out}/fgemma-{r}-{name}.json"))
        mib = j["weight_mib"]
        for m in j["results"]:
            if m["metric"] == "prefill_tok_per_s": fp.append(m["value"])
            if m["metric"] == "decode_ms_per_token": fd.append(1000.0 / m["value"])
        for t in json.load(open(f"{out}/llama-{r}-{name}.json")):
            (lp if t["n_prompt"] > 0 else ld).append(t["avg_ts"])
    p, d, q, e = (statistics.median(x) for x in (fp, fd, lp, ld))
    roofline = gbps * 1e9 / (mib * 1048576)  # tokens/s if every weight byte is read once a token
    print(f"| {name} | {p:.1f} / {q:.1f} | {p / q:.2f}x | {d:.1f} / {e:.1f} | {d / e:.2f}x | {100 * d / roofline:.0f} % |")
EOF
