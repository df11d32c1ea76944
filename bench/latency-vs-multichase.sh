#!/usr/bin/env bash
# Idle latency: membw latency against google/multichase on the same CPU,
# working set and page size, interleaved ROUNDS times, for both of membw's
# chase orders against the multichase run that walks memory the same way:
#   random      vs multichase -s 64 -T SIZE  (every line, one random cycle)
#   page-local  vs multichase (its defaults: -s 256 -T 256k)
# PAGES is membw's --hugepages: thp (multichase -H, transparent hugepages)
# or never (4 KiB pages, multichase without -H).
#
#   bench/latency-vs-multichase.sh MULTICHASE [ROUNDS] [SIZE_MIB] [CPU] [PAGES]
#   e.g. (fetch google/multichase; make multichase) then
#        bench/latency-vs-multichase.sh /tmp/multichase/multichase 5 64 1 never
set -euo pipefail
cd "$(dirname "$0")/.."
multichase=$1
rounds=${2:-10}
mib=${3:-256}
cpu=${4:-0}
pages=${5:-thp}
membw=${MEMBW:-target/release/membw}
huge=()
[ "$pages" = thp ] && huge=(-H)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), ${mib} MiB, pages: $pages, CPU $cpu"
for _ in $(seq 1 "$rounds"); do
    full=$(taskset -c "$cpu" "$multichase" "${huge[@]}" -m "${mib}m" -s 64 -T "${mib}m" -n 4 | tail -1)
    local_=$(taskset -c "$cpu" "$multichase" "${huge[@]}" -m "${mib}m" -n 4 | tail -1)
    ours=$("$membw" latency --cpu "$cpu" --sizes "${mib}MiB" --hugepages "$pages" --time 2s --format json |
        python3 -c "
import json, sys
p = {q['order']: q['p50_ns'] for q in json.load(sys.stdin)['points']}
print(p['random'], p['page-local'])")
    echo "$full $local_ $ours"
done | python3 -c "
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 4]
for mf, ml, r, pl in rows:
    print(f'random: membw p50 {r:7.1f} / multichase -s 64 -T size {mf:7.1f} = {r / mf:.3f}   '
          f'page-local: membw p50 {pl:7.1f} / multichase default {ml:7.1f} = {pl / ml:.3f}')
for name, ours, theirs in (('random', 2, 0), ('page-local', 3, 1)):
    r = [row[ours] / row[theirs] for row in rows]
    print(f'{len(r)} rounds, {name}: median membw p50 / multichase {statistics.median(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
"
