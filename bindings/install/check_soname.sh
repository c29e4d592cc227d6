#!/usr/bin/env bash
# Fails unless libfgemma's SONAME and its file name agree: check_soname.sh LIBRARY_FILE SOVERSION
#   the SONAME (readelf -d) is libfgemma.so.SOVERSION, and the file it names is LIBRARY_FILE's own
#   name, libfgemma.so.SOVERSION.MINOR.PATCH (a SONAME libfgemma.so.1 on a libfgemma.so.0.1.0 misleads
#   packagers and ldconfig's readers).
set -euo pipefail
file="$1" soversion="$2"
soname="$(readelf -d "$file" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
name="$(basename "$file")"
echo "file $name, SONAME $soname"
[ "$soname" = "libfgemma.so.$soversion" ] || { echo "SONAME $soname, expected libfgemma.so.$soversion" >&2; exit 1; }
[[ "$name" =~ ^libfgemma\.so\.${soversion}\.[0-9]+\.[0-9]+$ ]] ||
  { echo "file $name does not carry its SONAME's major $soversion (libfgemma.so.$soversion.MINOR.PATCH)" >&2; exit 1; }
