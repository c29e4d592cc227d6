#!/usr/bin/env bash
# Warm call latency of two fgemma CLIs side by side on one machine (issue 14: "p50 warm latency at
# most half of today's"): e.g. a build of the commit before speculative drafts against this one.
#   scripts/call-ab.sh BEFORE_CLI AFTER_CLI [MODEL.gguf] [--rounds N] [--repeat N] [--threads N]
# For every call of examples/smart-home/calls.jsonl, each CLI runs `fgemma call --repeat N --follow
# <the call> <utterance>` (the first request builds the catalog's state, the others restore it:
# warm); the two CLIs alternate call by call and swap order every round, so a shared machine's
# slow spells fall on both. Prints passes per call and warm total_ms p50/p95 of each, and the ratio.
# Only flags every CLI since `call --follow` has are used, so any older build can be the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
before="$1" after="$2"
shift 2
model="${TMPDIR:-/tmp}/fgemma-call-bench/270m-q8_0.gguf"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then model="$1"; shift; fi
rounds=2 repeat=6 threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -f "$model" ] || { echo "$model missing: scripts/call-bench.sh makes it" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
calls=examples/smart-home/calls.jsonl
n=$(wc -l < "$calls")
for ((round = 0; round < rounds; ++round)); do
  for ((i = 1; i <= n; ++i)); do
    line=$(sed -n "${i}p" "$calls")
    utterance=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["utterance"])' "$line")
    output=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["output"])' "$line")
    order=(before after)
    (( (round + i) % 2 )) && order=(after before)
    for which in "${order[@]}"; do
      cli=$before
      [ "$which" = after ] && cli=$after
      "$cli" call --model "$model" --tools examples/smart-home/tools.json --threads "$threads" --repeat "$repeat" \
        --follow "$output" "$utterance" 2>/dev/null | tail -n +2 >> "$out/$which.jsonl"
    done
  done
done
python3 - "$out" "$before" "$after" <<'EOF'
import json, statistics, sys
out, names = sys.argv[1], {"before": sys.argv[2], "after": sys.argv[3]}
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]
p50 = {}
print(f"{'cli':<8} {'calls':>6} {'passes':>7} {'p50 ms':>8} {'p95 ms':>8}  path")
for which in ("before", "after"):
    rows = [json.loads(l)["timing"] for l in open(f"{out}/{which}.jsonl")]
    total = [r["total_ms"] for r in rows]
    passes = [r["passes"] for r in rows if "passes" in r]
    p50[which] = statistics.median(total)
    mean_passes = f"{statistics.mean(passes):.2f}" if passes else "n/a"
    print(f"{which:<8} {len(rows):>6} {mean_passes:>7} {p50[which]:>8.1f} {pct(total, 0.95):>8.1f}  {names[which]}")
print(f"p50 after / before: {p50['after'] / p50['before']:.2f}")
EOF
