#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan) and runs each for a fixed budget,
# starting from its checked-in seeds in fuzz/corpus/<name>/ (never written to: new inputs go to a
# scratch corpus). Fails on the first crash, leak, timeout or sanitizer report; the reproducer is
# left in $FUZZ_OUT (default /tmp/fgemma-fuzz-out) as crash-*/leak-*/timeout-*. Keep a fixed one as
# fuzz/corpus/<name>/regress-<what> so every later run replays it.
# Usage: scripts/fuzz.sh [seconds per target, default 20] [target names... default all]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
out="${FUZZ_OUT:-/tmp/fgemma-fuzz-out}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${FGEMMA_JOBS:-2}"
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in fuzz/*_fuzzer.cpp; do
    n="$(basename "$f" .cpp)"
    targets+=("${n%_fuzzer}")
  done
fi
mkdir -p "$out"
summary=()
status=0
for t in "${targets[@]}"; do
  bin="build/fuzz/fuzz/${t}_fuzzer"
  scratch="$out/corpus-$t"
  mkdir -p "$scratch"
  log="$out/$t.log"
  echo "== fuzz $t (${seconds}s)"
  if (cd "$out" && "$OLDPWD/$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="$out/$t-" "$scratch" "$OLDPWD/fuzz/corpus/$t") >"$log" 2>&1; then
    execs="$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')"
    summary+=("$t: ${execs:-?} executions, no crash")
  else
    summary+=("$t: FAILED (see $log)")
    tail -40 "$log"
    status=1
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
