#!/usr/bin/env bash
# The test command: builds and runs every test (including the `heavy` label) in Release, then the
# default suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
# FGEMMA_SKIP_ASAN=1 skips the sanitizer pass (for quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --workflow --preset release
if [ "${FGEMMA_SKIP_ASAN:-0}" != 1 ]; then
  cmake --workflow --preset asan
fi
