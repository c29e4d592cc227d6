#!/usr/bin/env bash
# Per-function guest instructions per decode / prefill token (the runs of scripts/arm-cost.sh, two
# subtracted) from the translation-block counts of tbprof.c (cc -O2 -shared -fPIC -o /tmp/r15/tbprof.so
# tbprof.c), mapped to symbols with aarch64-linux-gnu-nm (the aarch64 fgemma is static, not PIE).
# Paths are those of the issue #15 session (/tmp/r15, /tmp/fgemma-arm-cost).
# prof.sh BIN CPU FORCED TYPE OUTDIR : per-function decode/prefill instructions per token
set -eu
bin=$1 cpu=$2 forced=$3 type=$4 out=$5
mkdir -p $out
w=/tmp/fgemma-arm-cost
run() { FGEMMA_ARM_TARGET="$forced" TBPROF_OUT=$out/$1.tb nice -n 19 qemu-aarch64 -cpu $cpu -plugin /tmp/r15/tbprof.so $bin bench --model $w/270m-$type.gguf --threads 1 --prefill 32 --decode-contexts 64 --decode-zero-fill "${@:2}" >/dev/null 2>$out/$1.err; }
run base --repetitions 1 --decode-steps 4 &
run dec --repetitions 1 --decode-steps 20 &
wait
run pre --repetitions 2 --decode-steps 4
aarch64-linux-gnu-nm -C --defined-only -n $bin | awk '$2 ~ /[tTwW]/' > $out/syms
python3 - $out <<'PY'
import sys, bisect, collections
d = sys.argv[1]
syms = []
for l in open(d + '/syms'):
    p = l.rstrip('\n').split(' ', 2)
    syms.append((int(p[0], 16), p[2]))
syms.sort()
addrs = [a for a, _ in syms]
def load(n):
    c = collections.Counter()
    for l in open(d + '/' + n + '.tb'):
        a, k = l.split()
        a = int(a, 16); i = bisect.bisect_right(addrs, a) - 1
        c[syms[i][1] if i >= 0 else '?'] += int(k)
    return c
b, de, pr = load('base'), load('dec'), load('pre')
keys = set(b) | set(de) | set(pr)
rows = [(k, (de[k] - b[k]) / 16, (pr[k] - b[k]) / 32) for k in keys]
print('decode/token %.3fM  prefill/token %.3fM' % (sum(r[1] for r in rows) / 1e6, sum(r[2] for r in rows) / 1e6))
for k, x, y in sorted(rows, key=lambda r: -abs(r[1]) - abs(r[2]))[:40]:
    if abs(x) < 2000 and abs(y) < 2000: continue
    print('%10.0f %10.0f  %s' % (x, y, k[:150]))
PY
