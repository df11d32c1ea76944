#!/usr/bin/env bash
# What the MPI barriers around every kernel cost: the aggregate Triad of
# 2 ranks × 1 thread (mpirun --bind-to core) against membw run --threads 2
# on the same CPUs and the same total bytes, interleaved ROUNDS times.
# Prints each pair and the ratios aggregate / threads.
#
#   bench/mpi-barrier.sh [ROUNDS] [ELEMENTS_PER_RANK] [NTIMES]
#   needs: cargo build --release --features mpi --target-dir target/mpi
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
per_rank=${2:-20000000}
ntimes=${3:-20}
mpi=${MEMBW_MPI:-target/mpi/release/membw}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
triad='import json,sys; d=json.load(sys.stdin); print([r["best_rate_mb_s"] for r in d["measurement"]["results"] if r["kernel"]=="triad"][0])'
for _ in $(seq 1 "$rounds"); do
    ranks=$(mpirun -np 2 --bind-to core --map-by core "$mpi" run --json --kernels triad \
        --size "$per_rank" --ntimes "$ntimes" 2>/dev/null | python3 -c "$triad")
    threads=$("$mpi" run --json --kernels triad --threads 2 --cpus 0,1 \
        --size $((2 * per_rank)) --ntimes "$ntimes" 2>/dev/null | python3 -c "$triad")
    echo "$ranks $threads"
done | python3 -c "
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if len(l.split()) == 2]
for a, t in rows: print(f'2 ranks {a:10.1f}  2 threads {t:10.1f}  ratio {a / t:.3f}')
r = [a / t for a, t in rows]
print(f'{len(r)} rounds: median ratio ranks/threads {statistics.median(r):.3f}, geometric mean {statistics.geometric_mean(r):.3f}, range {min(r):.3f}-{max(r):.3f}')
"
