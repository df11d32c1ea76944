#!/usr/bin/env bash
# Loaded latency's two quality bars, interleaved ROUNDS times:
#  1. at zero delay the load threads move what `membw run` moves with the
#     same CPUs, kernel and store mode (read=read, 2:1=add, 3:1=striad,
#     copy=copy, nt-write=write with streaming stores);
#  2. at the largest delay the chaser sees its idle latency.
# The load's rate is an average over the chaser's window; run's is the best
# repetition, so both run's best and its average are given.
#
#   bench/loaded-vs-run.sh [ROUNDS] [CHASER_CPU] [LOAD_CPUS] [ARRAY]
#   e.g. bench/loaded-vs-run.sh 10 0 1 128MiB
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
chaser=${2:-0}
load=${3:-1}
array=${4:-128MiB}
membw=${MEMBW:-target/release/membw}
threads=$(python3 -c "import sys; from itertools import chain; print(sum(len(range(int(a), int(b or a) + 1)) for a, _, b in (p.partition('-') for p in sys.argv[1].split(','))))" "$load")
for _ in $(seq 1 "$rounds"); do
    for pair in read:read 2:1:add 3:1:striad copy:copy nt-write:write; do
        mix=${pair%:*} kernel=${pair##*:}
        stores=regular; [ "$mix" = nt-write ] && stores=nt
        loaded=$("$membw" latency --loaded --cpu "$chaser" --load-cpus "$load" --mix "$mix" \
            --delays 10us,0 --sizes 256MiB --load-size "$array" --time 500ms --format json |
            python3 -c "
import json, sys
r = json.load(sys.stdin)['records']
print(r[2]['load']['gb_s'], r[1]['latency']['p50_ns'], r[0]['latency']['p50_ns'])")
        run=$("$membw" run --kernels "$kernel" --cpus "$load" --threads "$threads" --stores "$stores" \
            --hugepages thp --size "$array" --ntimes 20 --json |
            python3 -c "
import json, sys
m = json.load(sys.stdin)['measurement']
k = m['results'][0]
print(k['best_rate_mb_s'] / 1e3, k['bytes_per_element'] * m['array_elements'] * m['inner_repeats'] / k['avg_time_s'] / 1e9)")
        echo "$mix $loaded $run"
    done
done | python3 -c "
import statistics, sys
rows = [l.split() for l in sys.stdin if len(l.split()) == 6]
for mix in dict.fromkeys(r[0] for r in rows):
    rs = [list(map(float, r[1:])) for r in rows if r[0] == mix]
    best = [gb / b for gb, _, _, b, _ in rs]
    avg = [gb / a for gb, _, _, _, a in rs]
    idle = [slow / i for _, slow, i, _, _ in rs]
    med = statistics.median
    print(f'{mix:9} zero delay / run best {med(best):.3f} ({min(best):.2f}-{max(best):.2f})'
          f'   / run average {med(avg):.3f}   largest delay / idle latency {med(idle):.3f} ({min(idle):.2f}-{max(idle):.2f})   {len(rs)} rounds')
"
