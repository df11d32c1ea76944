#!/usr/bin/env bash
# DRAM bandwidth: membw run (stores as auto picks them) against STREAM's four
# loops built by gcc (bench/stream-omp.c), against a glibc memcpy() per
# thread over the same bytes (bench/memcpy-omp.c), and, where STREAM_C
# names a copy of the reference stream.c (jeffhammond/STREAM, not kept
# here), against that too: gcc turns its copy loop over static arrays into
# a memcpy call. Same threads, CPUs and elements;
# rounds alternate (A B C A B C ...); the best of each, and membw / peer.
#
#   bench/stream-and-memcpy.sh [THREADS] [ELEMENTS] [ROUNDS]
#   STREAM_C=/tmp/STREAM/stream.c bench/stream-and-memcpy.sh 2 100000000 3
set -euo pipefail
cd "$(dirname "$0")/.."
MEMBW=${MEMBW:-target/release/membw}
THREADS=${1:-$(nproc)}
N=${2:-100000000}
ROUNDS=${3:-3}
[ -x "$MEMBW" ] || cargo build --release --quiet
command -v gcc >/dev/null || { echo "gcc not found"; exit 1; }
mkdir -p bench/out
gcc -O3 -march=native -fopenmp -o bench/out/stream-omp bench/stream-omp.c
gcc -O3 -march=native -fopenmp -o bench/out/memcpy-omp bench/memcpy-omp.c
if [ -n "${STREAM_C:-}" ]; then
  gcc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$N" -DNTIMES=20 \
    -o bench/out/stream-ref "$STREAM_C"
fi
CPUS=$(seq -s, 0 $((THREADS - 1)))
export OMP_NUM_THREADS=$THREADS OMP_PROC_BIND=close OMP_PLACES="$(echo "$CPUS" | sed 's/[0-9]\+/{&}/g')"
isa=$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || (grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo other))
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') ($isa), $THREADS threads on CPUs $CPUS, $N elements per array, best of $ROUNDS alternated rounds"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$ROUNDS"); do
  "$MEMBW" run --size "$N" --ntimes 20 --cpus "$CPUS" --format csv |
    awk -F, 'NR>1 {print "membw", $3, $4}' >>"$tmp/rates"
  bench/out/stream-omp "$N" 20 2>/dev/null |
    awk '{k=tolower($1); sub(":", "", k); print "loops", k, $2}' >>"$tmp/rates"
  bench/out/memcpy-omp "$N" 20 2>/dev/null | awk '{print "memcpy copy", $2}' >>"$tmp/rates"
  if [ -x bench/out/stream-ref ] && [ -n "${STREAM_C:-}" ]; then
    bench/out/stream-ref | awk '/^(Copy|Scale|Add|Triad):/ {k=tolower($1); sub(":", "", k); print "stream.c", k, $2}' >>"$tmp/rates"
  fi
done
python3 - "$tmp/rates" <<'EOF'
import sys
best = {}
for line in open(sys.argv[1]):
    who, kernel, rate = line.split()
    best[(who, kernel)] = max(best.get((who, kernel), 0.0), float(rate))
peers = [("loops", "STREAM loops, gcc"), ("stream.c", "stream.c, gcc"), ("memcpy", "glibc memcpy")]
print(f"{'kernel':8} {'membw MB/s':>11}  " + "  ".join(f"{name:>20}" for _, name in peers))
for k in ("copy", "scale", "add", "triad"):
    m = best.get(("membw", k))
    cells = []
    for who, _ in peers:
        p = best.get((who, k))
        cells.append(f"{p:10.1f} ({m / p:5.3f}x)" if p and m else f"{'-':>20}")
    print(f"{k:8} {m:11.1f}  " + "  ".join(f"{c:>20}" for c in cells))
EOF
