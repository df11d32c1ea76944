#!/usr/bin/env bash
# Two membw builds on the same bytes and CPUs, interleaved (A B A B ...):
# the check a change to the measuring path (protocol, team, backends) owes
# its note. Prints each round's best rate per kernel and, at the end, per
# kernel the median and the best of B/A.
#
#   bench/ab-builds.sh OLD NEW [ROUNDS] [membw run options...]
#   e.g. cp target/release/membw /tmp/membw-old   (before the change)
#        cargo build --release
#        bench/ab-builds.sh /tmp/membw-old target/release/membw 8 --size 100M --stores nt
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1
new=$2
rounds=${3:-8}
shift 3 || shift $#
for round in $(seq 1 "$rounds"); do
    for side in A B; do
        if [ "$side" = A ]; then bin=$old; else bin=$new; fi
        "$bin" run --format json "$@" | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('$side', $round, ' '.join(f\"{r['kernel']}={r['best_rate_mb_s'] / 1e3:.3f}\" for r in d['measurement']['results']))"
    done
done | python3 -c "
import statistics, sys
rows = {}
for line in sys.stdin:
    side, rnd, *rates = line.split()
    print(line.rstrip())
    for kv in rates:
        k, v = kv.split('=')
        rows.setdefault(k, {}).setdefault(side, []).append(float(v))
print()
print(f\"{'kernel':8} {'A best':>8} {'B best':>8} {'B/A best':>9} {'median B/A':>11}\")
for k, sides in rows.items():
    a, b = sides['A'], sides['B']
    ratios = [y / x for x, y in zip(a, b)]
    print(f'{k:8} {max(a):8.2f} {max(b):8.2f} {max(b) / max(a):9.3f} {statistics.median(ratios):11.3f}')
"
