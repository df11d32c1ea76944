#!/usr/bin/env bash
# Core-to-core latency: membw latency --c2c against google/multichase's
# pingpong (-u: a plain load and store, as membw bounces its line; -r 0: no
# pause between polls) on the same pair of CPUs, interleaved ROUNDS times.
# Both report one hop (half a round trip) of a modified line. multichase
# prints the best of its samples; membw prints min and p50 of its chunks.
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
    theirs=$(taskset -c "$a,$b" "$pingpong" -u -r 0 | awk -v a="$a" '$1 == a":" {print $2}')
    ours=$(taskset -c "$a,$b" "$membw" latency --c2c --time 1s --format json |
        python3 -c "import json,sys; p=json.load(sys.stdin)['points'][0]; print(p['min_ns'], p['p50_ns'])")
    echo "$theirs $ours"
done | python3 -c "
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 3]
for t, mn, p50 in rows: print(f'multichase {t:7.1f} ns   membw min {mn:7.1f} p50 {p50:7.1f} ns   p50/multichase {p50 / t:.3f}')
for name, col in (('min', 1), ('p50', 2)):
    r = [row[col] / row[0] for row in rows]
    print(f'{len(r)} rounds: median ratio membw {name} / multichase {statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
"
