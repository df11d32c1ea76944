#!/usr/bin/env bash
# Idle DRAM latency: membw latency against google/multichase on the same
# CPU, working set and page size (transparent hugepages), interleaved ROUNDS
# times. multichase is told to randomize over the whole working set with a
# 64-byte stride (-s 64 -T SIZE), as membw does; its default 256 KiB TLB
# locality would hide the TLB misses that membw counts.
#
#   bench/latency-vs-multichase.sh MULTICHASE [ROUNDS] [SIZE_MIB] [CPU]
#   e.g. (fetch google/multichase; make multichase) then
#        bench/latency-vs-multichase.sh /tmp/multichase/multichase 10 256 1
set -euo pipefail
cd "$(dirname "$0")/.."
multichase=$1
rounds=${2:-10}
mib=${3:-256}
cpu=${4:-0}
membw=${MEMBW:-target/release/membw}
for _ in $(seq 1 "$rounds"); do
    theirs=$(taskset -c "$cpu" "$multichase" -H -m "${mib}m" -s 64 -T "${mib}m" -n 4 | tail -1)
    ours=$("$membw" latency --cpu "$cpu" --sizes "${mib}MiB" --hugepages thp --time 2s --format json |
        python3 -c "import json,sys; p=json.load(sys.stdin)['points'][0]; print(p['min_ns'], p['p50_ns'])")
    echo "$theirs $ours"
done | python3 -c "
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 3]
for t, mn, p50 in rows: print(f'multichase {t:7.1f} ns   membw min {mn:7.1f} p50 {p50:7.1f} ns   p50/multichase {p50 / t:.3f}')
for name, col in (('min', 1), ('p50', 2)):
    r = [row[col] / row[0] for row in rows]
    print(f'{len(r)} rounds: median ratio membw {name} / multichase best {statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
"
