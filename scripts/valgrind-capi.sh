#!/usr/bin/env bash
# valgrind memcheck on the C API tests (scripts/test.sh's valgrind stage, FGEMMA_VALGRIND=1).
# Its own build: libhwy.so's start-up code uses RDTSCP, which valgrind 3.19 cannot run, so this
# build uses Highway's static target without libhwy (preset valgrind, as the cross builds do).
# FGEMMA_VALGRIND_FILTER replaces the gtest filter below.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset valgrind >/dev/null
cmake --build --preset valgrind --target fgemma_capi_tests  # only what runs under valgrind
bin=build/valgrind/tests/fgemma_capi_tests
logs=build/valgrind/memcheck
# Every C API entry point, calls on the mini model included (plain, drafted, cancelled, with an
# adapter, in shared pass groups), but the tests that repeat those calls many times over: under
# memcheck each call on the mini model costs 10-40 s, and these five took 21 of the stage's 24
# minutes (2026-12-04, AMD EPYC), which pushed CI past its limit. The ASan stage runs them all.
skip="SharedPassesCapi.ConcurrentCallersSharePassesAndAnswerAsAlone"  # 19 calls on 4 threads
skip+=":SharedPassesCapi.CallersWithOneAdapterShareItAndItsPasses"   # 4 adapter calls
skip+=":CapiInjectionTest.EveryTokenInEveryPlaceThroughTheCApi"      # 2 calls a token and place
skip+=":CapiTest.DraftsOnByDefaultChangeNothing"                     # 4 calls
skip+=":CapiTest.ModelOutlivesNothingButIsShared"                    # 4 threads calling
filter="${FGEMMA_VALGRIND_FILTER:-*:-$skip}"
# memcheck runs one thread at a time: two gtest shards use both cores (one memcheck process a test
# took half as long again: each loads the fixtures anew). Without --track-origins (twice the cost):
# a report still names the uninitialized read; FGEMMA_VALGRIND_ORIGINS=1 also finds where the
# value came from.
origins=()
[ "${FGEMMA_VALGRIND_ORIGINS:-0}" = 1 ] && origins=(--track-origins=yes)
rm -rf "$logs"
mkdir -p "$logs"
start=$SECONDS
for shard in 0 1; do
  GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard valgrind --tool=memcheck --error-exitcode=99 \
    --leak-check=full --errors-for-leak-kinds=definite "${origins[@]}" \
    "$bin" --gtest_brief=1 --gtest_filter="$filter" >"$logs/shard-$shard.log" 2>&1 &
done
rc=0
for shard in 0 1; do
  wait -n || rc=$?
done
cat "$logs/shard-0.log" "$logs/shard-1.log"
if ((rc != 0)); then
  echo "valgrind memcheck FAILED (exit $rc)" >&2
  exit 1
fi
echo "valgrind memcheck: no error, no definite leak, in $((SECONDS - start)) s"
