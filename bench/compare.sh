#!/usr/bin/env bash
# Side-by-side bandwidth: membw against STREAM's loops built with gcc and
# against likwid-bench, same threads, same CPUs, same bytes per array,
# interleaved (A B A B ...) so that all see the same machine. Prints one ratio
# per kernel and store mode; installs nothing and skips a peer that is absent.
#
#   bench/compare.sh [THREADS] [BYTES_PER_ARRAY] [ROUNDS]
#   MEMBW=path/to/membw bench/compare.sh 2 1000000000 3
#
# likwid-bench reports the average over its iterations; membw's STREAM table
# reports the best repetition. Both are printed: "best" compares membw's best
# with likwid's figure (the issue's bar), "avg" compares membw's average-time
# rate with it (the stricter reading).
set -euo pipefail
cd "$(dirname "$0")/.."

MEMBW=${MEMBW:-target/release/membw}
cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
THREADS=${1:-$cores}
BYTES=${2:-1000000000}
ROUNDS=${3:-3}

[ -x "$MEMBW" ] || cargo build --release --quiet
# First hardware thread of each core, in CPU order: one thread per core.
CPUS=$(lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | sort -t, -k3,3n -k2,2n -k1,1n -u -t, -k2,3 \
    | awk -F, '!seen[$2","$3]++ {print $1}' | head -n "$THREADS" | paste -sd, -)

if grep -qw avx512f /proc/cpuinfo; then w=avx512; nt_triad=stream_mem_avx512; rg_triad=stream_avx512_fma
else w=avx; nt_triad=stream_mem_avx_fma; rg_triad=stream_avx_fma; fi
# membw kernel, store mode, likwid kernel, arrays (likwid sizes its whole working set)
pairs=(
  "copy nt copy_mem_$w 2"
  "copy regular copy_$w 2"
  "triad nt $nt_triad 3"
  "triad regular $rg_triad 3"
)

membw_rates() { # kernel stores -> "best avg" in MB/s
  "$MEMBW" run --kernels "$1" --stores "$2" --size "${BYTES}B" --cpus "$CPUS" --format csv \
    | awk -F, 'NR==2 {best=$4; min=$6; avg=$5; printf "%.1f %.1f\n", best, best*min/avg}'
}
likwid_rate() { # likwid kernel, arrays -> MB/s (its byte parser overflows past 2^31 B, so kB)
  likwid-bench -t "$1" -w "N:$(( BYTES * $2 / 1000 ))kB:$THREADS" 2>/dev/null | awk '/^MByte\/s:/ {print $2}'
}

gcc_stream() { # -> "copy triad" MB/s from STREAM's loops built by gcc
  OMP_NUM_THREADS=$THREADS OMP_PLACES="$(echo "$CPUS" | sed 's/[0-9]\+/{&}/g')" OMP_PROC_BIND=close \
    bench/out/stream-omp "$(( BYTES / 8 ))" 20 2>/dev/null | awk '/^Copy:/ {c=$2} /^Triad:/ {t=$2} END {print c, t}'
}

# Part 1: STREAM's loops as gcc builds them, same threads, CPUs and array size.
if command -v gcc >/dev/null; then
  mkdir -p bench/out
  gcc -O3 -march=native -fopenmp -o bench/out/stream-omp bench/stream-omp.c
  echo "membw vs STREAM loops (gcc -O3 -march=native -fopenmp): $THREADS threads on CPUs $CPUS, $BYTES bytes per array, best of $ROUNDS interleaved rounds"
  printf '%-8s %-10s %12s %12s %8s\n' kernel membw membw_MB/s gcc_MB/s ratio
  for stores in auto regular; do
    gc=0; gt=0; mc=0; mt=0
    for _ in $(seq "$ROUNDS"); do
      read -r c t < <(gcc_stream)
      read -r mc1 mt1 < <("$MEMBW" run --kernels copy,triad --stores "$stores" --size "${BYTES}B" --cpus "$CPUS" --format csv \
        | awk -F, 'NR==2 {c=$4} NR==3 {t=$4} END {print c, t}')
      gc=$(awk -v x="$gc" -v y="$c" 'BEGIN{print (y>x)?y:x}'); gt=$(awk -v x="$gt" -v y="$t" 'BEGIN{print (y>x)?y:x}')
      mc=$(awk -v x="$mc" -v y="$mc1" 'BEGIN{print (y>x)?y:x}'); mt=$(awk -v x="$mt" -v y="$mt1" 'BEGIN{print (y>x)?y:x}')
    done
    awk -v s="$stores" -v mc="$mc" -v gc="$gc" -v mt="$mt" -v gt="$gt" 'BEGIN {
      printf "%-8s %-10s %12.1f %12.1f %8.3f\n", "copy", "--stores " s, mc, gc, mc/gc
      printf "%-8s %-10s %12.1f %12.1f %8.3f\n", "triad", "--stores " s, mt, gt, mt/gt }'
  done
  echo
else
  echo "gcc not found: STREAM comparison skipped"
fi

# Part 2: likwid-bench.
echo "membw vs likwid-bench: $THREADS threads on CPUs $CPUS, $BYTES bytes per array, best of $ROUNDS interleaved rounds"
if [ "$(uname -m)" != x86_64 ]; then
  # On Arm, likwid's kernels exist for fixed SVE widths only: gcc's STREAM
  # loops above are the peer there.
  echo "likwid-bench comparison is x86_64 only ($(uname -m) here): skipped"; exit 0
fi
if ! command -v likwid-bench >/dev/null; then
  echo "likwid-bench not found (Debian package likwid): skipped"; exit 0
fi
printf '%-8s %-8s %-20s %12s %12s %12s %8s %8s\n' kernel stores likwid membw_best membw_avg likwid best avg
for p in "${pairs[@]}"; do
  read -r kernel stores lk arrays <<<"$p"
  mb=0; ma=0; lb=0
  for _ in $(seq "$ROUNDS"); do
    read -r b a < <(membw_rates "$kernel" "$stores")
    l=$(likwid_rate "$lk" "$arrays")
    mb=$(awk -v x="$mb" -v y="$b" 'BEGIN{print (y>x)?y:x}')
    ma=$(awk -v x="$ma" -v y="$a" 'BEGIN{print (y>x)?y:x}')
    lb=$(awk -v x="$lb" -v y="${l:-0}" 'BEGIN{print (y>x)?y:x}')
  done
  awk -v k="$kernel" -v s="$stores" -v lk="$lk" -v mb="$mb" -v ma="$ma" -v lb="$lb" 'BEGIN {
    if (lb == 0) { printf "%-8s %-8s %-20s %12.1f %12.1f %12s %8s %8s\n", k, s, lk, mb, ma, "failed", "-", "-"; exit }
    printf "%-8s %-8s %-20s %12.1f %12.1f %12.1f %8.3f %8.3f\n", k, s, lk, mb, ma, lb, mb/lb, ma/lb }'
done
