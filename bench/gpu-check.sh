#!/usr/bin/env bash
# membw on an NVIDIA GPU node, side by side with BabelStream's CUDA build and
# a pinned cudaMemcpy loop, in about 5 minutes, offline. Needs: a membw
# release binary (built elsewhere: no CUDA is needed to build it), nvcc and
# cmake, BabelStream's source tree, python3; numactl where the node has it.
#
#   MEMBW=./membw bench/gpu-check.sh /path/to/BabelStream [ROUNDS]
#
# Prints: the GPUs as topo sees them; a run of every kernel on cuda:0;
# membw / BabelStream per kernel (best of ROUNDS alternated rounds, both on
# 2^25 doubles per array, 100 repetitions) with membw's share of the NVML
# peak; h2d and d2h from the GPU's own node against the pinned loop; the
# transfer matrix over every host node and a size sweep on the own node;
# a baseline and a check of the GPU. Work files go to a temporary folder
# (kept: its path is printed).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MEMBW=${MEMBW:-$here/../target/release/membw}
BABELSTREAM=${1:?usage: MEMBW=./membw bench/gpu-check.sh /path/to/BabelStream [ROUNDS]}
ROUNDS=${2:-3}
ELEMENTS=33554432 # 2^25: BabelStream's default, the STREAM rule on an H100's 50 MB L2
work=$(mktemp -d)
echo "gpu-check: work files in $work; membw $("$MEMBW" --version)"
section() { printf '\n== %s\n' "$*"; }

section "the GPUs (membw topo)"
"$MEMBW" topo | sed -n '/^GPUs/,/^$/p'
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.memory --format=csv

section "every kernel on cuda:0"
"$MEMBW" run --backend cuda:0 --kernels all --array-size "$ELEMENTS" --ntimes 100

section "BabelStream's CUDA build"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
cmake -S "$BABELSTREAM" -B "$work/babelstream" -DMODEL=cuda -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DCUDA_ARCH="sm_$arch" >"$work/cmake.log" 2>&1 &&
  cmake --build "$work/babelstream" -j >>"$work/cmake.log" 2>&1 || {
  echo "gpu-check: BabelStream does not build (see $work/cmake.log)"; tail -5 "$work/cmake.log"; }
babelstream=$(find "$work/babelstream" -type f -name 'cuda-stream' | head -1)

section "membw / BabelStream, best of $ROUNDS alternated rounds ($ELEMENTS doubles per array)"
for round in $(seq "$ROUNDS"); do
  "$MEMBW" run --backend cuda:0 --kernels copy,scale,add,triad,dot --array-size "$ELEMENTS" \
    --ntimes 100 --format json >"$work/membw-$round.json" 2>>"$work/membw.log"
  [ -n "$babelstream" ] && "$babelstream" --csv -n 100 -s "$ELEMENTS" >"$work/babelstream-$round.csv" 2>>"$work/babelstream.log"
done
python3 - "$work" "$ROUNDS" <<'PY'
import csv, glob, json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
names = {"Copy": "copy", "Mul": "scale", "Add": "add", "Triad": "triad", "Dot": "dot"}
membw, babel, peak = {}, {}, None
for f in glob.glob(f"{work}/membw-*.json"):
    m = json.load(open(f))["measurement"]
    peak = m["target"].get("peaks", {}).get("memory_gb_s")
    valid = m["validation"]["passed"]
    for r in m["results"]:
        membw[r["kernel"]] = max(membw.get(r["kernel"], 0), r["best_rate_mb_s"] / 1e3)
    print(f"membw {f.rsplit('/', 1)[1]}: validation {'passed' if valid else 'FAILED'}")
for f in glob.glob(f"{work}/babelstream-*.csv"):
    for row in csv.DictReader(open(f)):
        k = names.get(row.get("function", ""))
        if k:
            babel[k] = max(babel.get(k, 0), float(row["max_mbytes_per_sec"]) / 1e3)
print(f"{'kernel':<8}{'membw GB/s':>12}{'BabelStream':>13}{'ratio':>8}{'% NVML peak':>13}")
for k in ["copy", "scale", "add", "triad", "dot"]:
    m, b = membw.get(k), babel.get(k)
    ratio = f"{m / b:.3f}" if m and b else "-"
    share = f"{100 * m / peak:.1f}" if m and peak else "-"
    print(f"{k:<8}{m or 0:>12.1f}{b or 0:>13.1f}{ratio:>8}{share:>13}")
print(f"NVML memory peak: {peak} GB/s" if peak else "NVML memory peak: unknown")
PY

node=$(cat "/sys/bus/pci/devices/$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | tr 'A-F' 'a-f' | sed 's/^0000//')/numa_node" 2>/dev/null || echo 0)
[ "$node" -ge 0 ] 2>/dev/null || node=0
section "h2d and d2h from the GPU's own node ($node): membw / pinned cudaMemcpy loop"
bytes=$((256 << 20))
nvcc -O2 -o "$work/pinned-copy" "$here/pinned-copy.cu" 2>"$work/nvcc.log" || cat "$work/nvcc.log"
bind=()
command -v numactl >/dev/null && bind=(numactl --cpunodebind "$node" --membind "$node")
for round in $(seq "$ROUNDS"); do
  "$MEMBW" run --backend cuda:0 --kernels h2d,d2h --mem "bind:$node" --array-size "$((bytes / 8))" \
    --ntimes 20 --format json >"$work/link-membw-$round.json" 2>>"$work/membw.log"
  "${bind[@]}" "$work/pinned-copy" "$bytes" 10 5 >"$work/link-peer-$round.txt"
done
python3 - "$work" <<'PY'
import glob, json, sys
work = sys.argv[1]
membw, peer = {}, {}
for f in glob.glob(f"{work}/link-membw-*.json"):
    for r in json.load(open(f))["measurement"]["results"]:
        membw[r["kernel"]] = max(membw.get(r["kernel"], 0), r["best_rate_mb_s"] / 1e3)
for f in glob.glob(f"{work}/link-peer-*.txt"):
    for line in open(f):
        if len(line.split()) == 2:
            k, v = line.split()
            peer[k] = max(peer.get(k, 0), float(v))
for k in ["h2d", "d2h"]:
    m, p = membw.get(k, 0), peer.get(k, 0)
    print(f"{k}: membw {m:.2f} GB/s, pinned cudaMemcpy {p:.2f} GB/s, ratio {m / p if p else 0:.3f}")
PY

section "the transfer matrix: every host node"
mems=()
for n in $(ls -d /sys/devices/system/node/node* 2>/dev/null | sed 's/.*node//'); do mems+=(--mem "bind:$n"); done
[ ${#mems[@]} -gt 0 ] || mems=(--mem local)
"$MEMBW" sweep --backend cuda:0 --kernels transfers "${mems[@]}" --array-size 32M --ntimes 10 \
  --repeat 3 -o "$work/transfers.jsonl" 2>>"$work/membw.log"
# The sweep printed h2d's table; the other directions and movers:
for k in d2h bidir h2d-kernel d2h-kernel; do "$MEMBW" report "$work/transfers.jsonl" --kernel "$k" 2>/dev/null; done
section "sizes from 64 KiB to 1 GiB on the own node"
"$MEMBW" sweep --backend cuda:0 --kernels h2d,d2h --mem "bind:$node" \
  --working-sets 64KiB,1MiB,16MiB,256MiB,1GiB --ntimes 10 -o "$work/sizes.jsonl" 2>>"$work/membw.log"
"$MEMBW" report "$work/sizes.jsonl" --kernel d2h 2>/dev/null

section "baseline and check of cuda:0"
"$MEMBW" baseline --backend cuda:0 --rounds 3 -o "$work/gpu-baseline.json"
"$MEMBW" check --backend cuda:0 --baseline "$work/gpu-baseline.json"
echo "check exit: $?"
