#!/usr/bin/env bash
# Core-to-core latency: membw latency --c2c against google/multichase's
# pingpong on the same pair of CPUs, interleaved ROUNDS times. Both report
# one hop (half a round trip) of a modified line. multichase prints the best
# of five 250 ms means; membw prints min and p50 of its 256-round-trip chunks.
#
# multichase runs as `-u -r 1`: a plain load and store (as membw bounces its
# line) and one cpu_relax (PAUSE) per poll that finds the line unchanged,
# as membw's spin_loop hint. RELAX=0 drops the pause: measured on this VM
# (2026-11-26, fast mode) -r 0 reads 40-47 ns a hop where -r 1 reads 34-35
# and membw's p50 33-37, so the pause, not the tool, is what differs then.
#
#   bench/c2c-vs-multichase.sh PINGPONG [ROUNDS] [CPU_A CPU_B]
#   e.g. (fetch google/multichase; make pingpong) then
#        bench/c2c-vs-multichase.sh /tmp/multichase/pingpong 10 0 1
set -euo pipefail
cd "$(dirname "$0")/.."
pingpong=$1
rounds=${2:-10}
a=${3:-0}
b=${4:-1}
membw=${MEMBW:-target/release/membw}
for _ in $(seq 1 "$rounds"); do
    theirs=$(taskset -c "$a,$b" "$pingpong" -u -r "${RELAX:-1}" | awk -v a="$a" '$1 == a":" {print $2}')
    ours=$(taskset -c "$a,$b" "$membw" latency --c2c --time 1s --format json |
        python3 -c "import json,sys; p=json.load(sys.stdin)['points'][0]; print(p['min_ns'], p['p50_ns'])")
    echo "$theirs $ours"
done | python3 -c "
import statistics, sys
# This VM's host moves the two vCPUs between nearby and distant cores: a
# hop reads 14-50 ns in one mode and 180-250 ns in the other, and adjacent
# runs can land in different modes. A ratio across modes says nothing about
# the tools, so rounds are compared within a mode (fast: under 100 ns) and
# the rounds whose two readings fell in different modes are counted.
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 3]
for t, mn, p50 in rows: print(f'multichase {t:7.1f} ns   membw min {mn:7.1f} p50 {p50:7.1f} ns   p50/multichase {p50 / t:.3f}')
mode = lambda ns: 'fast' if ns < 100 else 'slow'
mixed = sum(mode(t) != mode(p50) for t, _, p50 in rows)
print(f'{len(rows)} rounds, {mixed} with the tools in different modes (not compared)')
for m in ('fast', 'slow'):
    same = [r for r in rows if mode(r[0]) == m and mode(r[2]) == m]
    if not same:
        continue
    for name, col in (('min', 1), ('p50', 2)):
        r = [row[col] / row[0] for row in same]
        print(f'{m} mode, {len(r)} rounds: median ratio membw {name} / multichase {statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
"
