#!/usr/bin/env bash
# membw's cache-level bandwidth against likwid-bench's on the same threads
# and the same working set per thread, regular stores, alternated rounds:
# membw sweep --working-sets SIZE (repetitions calibrated by time) against
# likwid-bench -w N:2×SIZE:THREADS (likwid sizes the whole team's working
# set). Prints the best of each per size and kernel, and membw/likwid.
#
#   bench/cache-levels.sh [THREADS] [ROUNDS] [SIZES...]
#   e.g. bench/cache-levels.sh 2 3 16KiB 256KiB 4MiB
# MEMBW_ARGS adds options to membw's sweep, e.g. MEMBW_ARGS="--ntimes 60":
# likwid-bench measures for at least a second, membw's default 10
# repetitions of about a millisecond each, which on a noisy host can miss
# every clean window at L3.
set -euo pipefail
cd "$(dirname "$0")/.."
MEMBW=${MEMBW:-target/release/membw}
THREADS=${1:-2}
ROUNDS=${2:-3}
shift 2 || shift $#
SIZES=("${@:-16KiB 256KiB 4MiB}")
[ "$#" -gt 0 ] || SIZES=(16KiB 256KiB 4MiB)
command -v likwid-bench >/dev/null || { echo "likwid-bench is not installed (apt-get install likwid)"; exit 1; }
[ -x "$MEMBW" ] || cargo build --release --quiet
if grep -qw avx512f /proc/cpuinfo; then w=avx512; fma=stream_avx512_fma
else w=avx; fma=stream_avx_fma; fi
# membw kernel, likwid kernel. membw's read sums what it loads (the sum is
# validated); likwid's load_* kernels discard the loaded data, its sum_*
# kernels sum it: read is shown against both.
pairs=("read load_$w" "read sum_$w" "copy copy_$w" "triad $fma" "dot ddot_$w")
kib() { # 16KiB -> 16
  python3 -c "import re,sys; t=sys.argv[1]; n,u=re.match(r'(\d+)([KMG]i?B)',t).groups(); print(int(n)*{'K':1,'M':1024,'G':1048576}[u[0]])" "$1"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, best of $ROUNDS alternated rounds"
printf '%-8s %-7s %-18s %12s %12s %7s\n' size kernel likwid membw_GB/s likwid_GB/s ratio
for size in "${SIZES[@]}"; do
  total_kb=$(( $(kib "$size") * THREADS * 1024 / 1000 ))
  for pair in "${pairs[@]}"; do
    read -r kernel lk <<<"$pair"
    best_m=0; best_l=0
    for _ in $(seq "$ROUNDS"); do
      rm -f "$tmp/s.jsonl"
      "$MEMBW" sweep --threads "$THREADS" --working-sets "$size" --kernels "$kernel" \
        --stores regular --ignore-env ${MEMBW_ARGS:-} -o "$tmp/s.jsonl" >/dev/null 2>&1
      m=$(python3 -c "import json; r=json.loads(open('$tmp/s.jsonl').readline()); print(r['runs'][0]['best_gb_s']['$kernel'])")
      l=$(likwid-bench -t "$lk" -w "N:${total_kb}kB:$THREADS" 2>/dev/null | awk '/^MByte\/s:/ {print $2/1000}')
      best_m=$(python3 -c "print(max($best_m, $m))"); best_l=$(python3 -c "print(max($best_l, ${l:-0}))")
    done
    python3 -c "print(f'{\"$size\":<8} {\"$kernel\":<7} {\"$lk\":<18} {$best_m:12.1f} {$best_l:12.1f} {($best_m/$best_l if $best_l else 0):7.2f}')"
  done
done
