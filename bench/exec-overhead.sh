#!/usr/bin/env bash
# What membw exec's sampling costs a program: the same binary run by hand
# (the variables membw would set, taskset to the same CPUs) and through
# `membw exec`, interleaved ROUNDS times; prints each pair's Triad (MB/s)
# and the ratios exec/hand, and what membw's watching cost in CPU time (its
# own CPU seconds over the program's wall time times its CPUs).
#
#   bench/exec-overhead.sh PROGRAM [ROUNDS] [ARGS...]
#   e.g. gcc -O2 -fopenmp bench/stream-omp.c -o /tmp/stream-gcc
#        bench/exec-overhead.sh /tmp/stream-gcc 20 20000000 10
set -euo pipefail
cd "$(dirname "$0")/.."
program=$1
rounds=${2:-20}
shift 2 || shift $#
membw=${MEMBW:-target/release/membw}
cpus=$("$membw" place --json | python3 -c "import json,sys; print(','.join(str(t['cpu']) for t in json.load(sys.stdin)['threads']))")
n=$(echo "$cpus" | tr ',' '\n' | wc -l)
places=$(echo "$cpus" | sed 's/\([0-9]*\)/{\1}/g')
for _ in $(seq 1 "$rounds"); do
    hand=$(OMP_NUM_THREADS=$n OMP_PLACES=$places OMP_PROC_BIND=close taskset -c "$cpus" \
        "$program" "$@" 2>/dev/null | awk '/Triad:/{print $2}')
    exec=$("$membw" exec --format json -- "$program" "$@" 2>/dev/null |
        python3 -c "import json,sys; d=json.load(sys.stdin); r=d['runs'][0]
print(d['stats']['triad']['mean']*1000, r['program']['watch_cpu_s']/(r['total_s']*len(r['cpus'])))")
    echo "$hand $exec"
done | python3 -c "
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 3]
for h, m, w in rows: print(f'hand {h:10.1f}  exec {m:10.1f}  ratio {m / h:.3f}  watching {100 * w:.3f} %')
r = [m / h for h, m, _ in rows]
w = [100 * w for _, _, w in rows]
print(f'{len(r)} rounds: median ratio exec/hand {statistics.median(r):.3f}, geometric mean {statistics.geometric_mean(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
print(f'watching took {statistics.median(w):.3f} % of the program\'s CPU time (median; max {max(w):.3f} %)')
"
