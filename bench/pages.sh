#!/usr/bin/env bash
# Page sizes side by side on this machine (as root): reserves the explicit
# huge pages it needs, gives them back at the end, and prints
#  - run's best rate per kernel on THP and on explicit 2 MiB pages,
#    interleaved rounds, and the median 2M/THP ratio per kernel;
#  - latency's p50 at one working set on 4 KiB, THP, 2 MiB and 1 GiB pages.
#
#   bench/pages.sh [MEMBW] [ROUNDS] [ARRAY_ELEMENTS] [CHASE_BYTES]
#   e.g. bench/pages.sh target/release/membw 8 128M 1GiB
set -euo pipefail
membw=${1:-target/release/membw}
rounds=${2:-8}
size=${3:-128M}
chase=${4:-1GiB}
pool2m=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
pool1g=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
old2m=$(cat "$pool2m")
old1g=$(cat "$pool1g" 2>/dev/null || echo 0)
trap 'echo "$old2m" > "$pool2m"; [ -e "$pool1g" ] && echo "$old1g" > "$pool1g"' EXIT
# A 1 GiB page needs a free, aligned GiB: ask for it first, after
# compacting; then enough 2 MiB pages for three arrays and the chase.
sync; echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/compact_memory
[ -e "$pool1g" ] && echo $(( old1g + 1 )) > "$pool1g" || true
elements=$(python3 -c "s='$size'; m={'K':1e3,'M':1e6,'G':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))")
echo $(( elements * 8 * 3 / 2097152 + 600 )) > "$pool2m"
for round in $(seq 1 "$rounds"); do
    for pages in thp 2M; do
        "$membw" run --size "$size" --hugepages "$pages" --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('$pages', $round, ' '.join(f\"{r['kernel']}={r['best_rate_mb_s'] / 1e3:.3f}\" for r in d['measurement']['results']))"
    done
done | python3 -c "
import statistics, sys
rows = {}
for line in sys.stdin:
    pages, rnd, *rates = line.split()
    print(line.rstrip())
    for r in rates:
        k, v = r.split('=')
        rows.setdefault(k, {}).setdefault(rnd, {})[pages] = float(v)
print()
print('kernel    median 2M/THP   rounds')
for k, by in rows.items():
    ratios = [r['2M'] / r['thp'] for r in by.values() if 'thp' in r and '2M' in r]
    print(f'{k:<9} {statistics.median(ratios):>12.3f}   {len(ratios)}')
"
echo
sizes=never,thp,2M
if [ "$(cat "$pool1g" 2>/dev/null || echo 0)" -gt "$old1g" ]; then sizes=$sizes,1G
else echo "(no 1 GiB page could be reserved: memory too fragmented, or no pdpe1gb)"; fi
"$membw" latency --sizes "$chase" --hugepages "$sizes" --time 1s
