#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan) and runs each for a fixed budget,
# starting from its checked-in seeds in fuzz/corpus/<name>/ (never written to: new inputs go to a
# scratch corpus). Fails on the first crash, leak, timeout or sanitizer report; the reproducer is
# left in $FUZZ_OUT (default /tmp/fgemma-fuzz-out) as crash-*/leak-*/timeout-*. Keep a fixed one as
# fuzz/corpus/<name>/regress-<what> so every later run replays it.
# Usage: scripts/fuzz.sh [seconds per target, default 20] [target names... default all]
# FGEMMA_FUZZ_JOBS fuzzers run at once (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
out="${FUZZ_OUT:-/tmp/fgemma-fuzz-out}"
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in fuzz/*_fuzzer.cpp; do
    n="$(basename "$f" .cpp)"
    targets+=("${n%_fuzzer}")
  done
fi
cmake --preset fuzz >/dev/null
# Only the fuzzers (and the layers they link): not the shared library or the server layer.
cmake --build --preset fuzz -j "${FGEMMA_JOBS:-2}" --target "${targets[@]/%/_fuzzer}"
mkdir -p "$out"
# One fuzzer per core at a time (FGEMMA_FUZZ_JOBS, default 2): CI's budget pays for the wall time.
parallel="${FGEMMA_FUZZ_JOBS:-2}"
run_one() {  # runs target $1, writes its one-line result to $out/$1.result
  local t="$1" bin="build/fuzz/fuzz/${1}_fuzzer" scratch="$out/corpus-$1" log="$out/$1.log" execs
  mkdir -p "$scratch"
  if (cd "$out" && "$OLDPWD/$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$out/$t-" "$scratch" "$OLDPWD/fuzz/corpus/$t") >"$log" 2>&1; then
    execs="$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')"
    echo "$t: ${execs:-?} executions in ${seconds}s, no crash" >"$out/$t.result"
  else
    echo "$t: FAILED (see $log)" >"$out/$t.result"
  fi
}
for t in "${targets[@]}"; do
  rm -f "$out/$t.result"
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  echo "== fuzz $t (${seconds}s)"
  run_one "$t" &
done
wait
status=0
for t in "${targets[@]}"; do
  line="$(cat "$out/$t.result" 2>/dev/null || echo "$t: FAILED (no result)")"
  echo "$line"
  if [[ "$line" == *FAILED* ]]; then
    tail -40 "$out/$t.log" || true
    status=1
  fi
done
exit $status
