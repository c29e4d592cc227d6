#!/usr/bin/env python3
"""Per-function guest instructions of (run B - run A) / DIVISOR, from two tb_profile.c outputs.

  tb_profile_diff.py BINARY A.txt B.txt DIVISOR [TOP] [NM]

arm-cost.sh's figures are such differences (e.g. a 2-repetition prefill minus a 1-repetition one,
divided by 32 tokens), so this splits them by function. BINARY must be the statically linked guest
program of both runs (its symbols name the blocks' start addresses); NM defaults to the armhf
cross toolchain's (arm-linux-gnueabihf-nm; aarch64-linux-gnu-nm for aarch64 builds)."""
import bisect
import collections
import subprocess
import sys


def function_starts(binary, nm):
    out = subprocess.run([nm, "-C", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    starts = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            starts.append((int(parts[0], 16) & ~1, parts[2]))  # bit 0 marks Thumb code
    starts.sort()
    return starts


def per_function(path, starts, addresses):
    totals = collections.Counter()
    for line in open(path):
        address, count = line.split()
        i = bisect.bisect_right(addresses, int(address, 16)) - 1
        totals[starts[i][1] if i >= 0 else "?"] += int(count)
    return totals


def main():
    binary, run_a, run_b, divisor = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    nm = sys.argv[6] if len(sys.argv) > 6 else "arm-linux-gnueabihf-nm"
    starts = function_starts(binary, nm)
    addresses = [a for a, _ in starts]
    a, b = per_function(run_a, starts, addresses), per_function(run_b, starts, addresses)
    diff = {name: b[name] - a[name] for name in set(a) | set(b)}
    for name, count in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:top]:
        print(f"{count / divisor / 1e6:9.3f}M {name[:160]}")
    print(f"{sum(diff.values()) / divisor / 1e6:9.3f}M total")


if __name__ == "__main__":
    main()
