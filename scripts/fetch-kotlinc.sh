#!/usr/bin/env bash
# Fetches the Kotlin compiler (org.jetbrains.kotlin:kotlin-compiler-embeddable and what it needs,
# pinned below) from Maven Central with Maven (-C: a jar whose checksum disagrees is an error) into the cache:
#   ${FGEMMA_CACHE_DIR:-~/.cache/fgemma}/kotlinc-$KOTLIN_VERSION/*.jar
# Debian 12 packages Kotlin 1.3 only. CMake finds the folder and then compiles and runs the Kotlin
# example of docs/java-kotlin.md against fgemma.jar (test kotlin_example). Idempotent: a complete
# folder is a no-op. Prints the folder on the last line. Exit codes: 0 ok, 1 failure.
set -euo pipefail
KOTLIN_VERSION=2.0.21
cache="${FGEMMA_CACHE_DIR:-${HOME:?HOME or FGEMMA_CACHE_DIR must be set}/.cache/fgemma}"
dir="$cache/kotlinc-$KOTLIN_VERSION"
fail() { echo "fetch-kotlinc: FAILED: $*" >&2; exit 1; }
if [ -f "$dir/complete" ]; then
  echo "fetch-kotlinc: present"
  echo "$dir"
  exit 0
fi
command -v mvn >/dev/null || fail "mvn is missing (Debian: maven; scripts/install-deps.sh installs it)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.fgemma</groupId><artifactId>kotlinc-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-compiler-embeddable</artifactId><version>$KOTLIN_VERSION</version></dependency>
    <dependency><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-stdlib</artifactId><version>$KOTLIN_VERSION</version></dependency>
  </dependencies>
</project>
POM
rm -rf "$dir"
mkdir -p "$dir" || fail "cannot create $dir"
mvn -q -B -C -Dstyle.color=never -f "$work/pom.xml" -Dmaven.repo.local="$work/m2" dependency:copy-dependencies \
    -DoutputDirectory="$dir" -DincludeScope=runtime -Dmdep.stripVersion=true ||
  fail "mvn could not fetch kotlin-compiler-embeddable $KOTLIN_VERSION from Maven Central"
[ -f "$dir/kotlin-compiler-embeddable.jar" ] && [ -f "$dir/kotlin-stdlib.jar" ] || fail "jars missing in $dir"
touch "$dir/complete"
echo "$dir"
