#!/usr/bin/env bash
# Installs a build to a temporary prefix as a user would (`cmake --install BUILD --prefix DIR`), then
# builds and runs a C consumer with pkg-config and one with find_package(fgemma), both against DIR
# only, installs the Python package with pip (offline) and loads the installed library with it, and
# runs the Java example against the installed fgemma.jar and libfgemma_jni.so.
# Usage: check_install.sh BUILD_DIR BINDINGS_DIR FIXTURES_DIR [PYTHON]
set -euo pipefail
build="$1" bindings="$2" fixtures="$3" python="${4:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir="$(find "$prefix" -name 'libfgemma.so.1' -printf '%h\n' | head -1)"
[ -n "$libdir" ] || { echo "no libfgemma.so.1 installed under $prefix"; exit 1; }

echo "== pkg-config"
pc="$(find "$prefix" -name fgemma.pc | head -1)"
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags="$(pkg-config --cflags --libs fgemma)"
echo "pkg-config: $flags"
case "$flags" in *"$prefix"*) ;; *) echo "fgemma.pc does not point into the install prefix $prefix"; exit 1 ;; esac
# shellcheck disable=SC2086
cc -std=c11 -Wall -Werror -o "$work/consumer-pc" "$bindings/install/consumer.c" $flags
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc" "$fixtures/models/mini-bf16"

echo "== find_package"
cmake -S "$bindings/install" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer" "$fixtures/models/mini-bf16"

if [ -n "$python" ]; then
  echo "== pip install ./bindings/python"
  "$python" -m pip install --quiet --no-index --disable-pip-version-check --target "$work/py" "$bindings/python" 2>&1 |
    grep -v "Running pip as the 'root' user" || true
  FGEMMA_LIBRARY="$libdir/libfgemma.so.1" PYTHONPATH="$work/py" "$python" -c '
import sys, fgemma
with fgemma.Model.load(sys.argv[1]) as m:
    assert len(m.tokenize("turn on the lights")) > 1
print("python: fgemma", fgemma.version(), "from", fgemma.__file__)' "$fixtures/models/mini-bf16"
fi
jar="$(find "$prefix" -name fgemma.jar | head -1)"
if [ -n "$jar" ] && command -v java >/dev/null; then
  echo "== java (installed fgemma.jar and libfgemma_jni.so, System.loadLibrary)"
  [ -e "$libdir/libfgemma_jni.so" ] || { echo "fgemma.jar installed without libfgemma_jni.so in $libdir"; exit 1; }
  # Java 11's source-file mode runs docs/java-kotlin.md's example against the installed files only.
  out="$(cd "$work" && LD_LIBRARY_PATH="$libdir" java -Djava.library.path="$libdir" -cp "$jar" \
    "$bindings/java/examples/CallLights.java" "$fixtures/models/mini-bf16")"
  case "$out" in *set_lights*) echo "java: ok" ;; *) echo "java example printed: $out"; exit 1 ;; esac
fi
echo "install consumers: ok"
