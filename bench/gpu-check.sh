#!/usr/bin/env bash
# membw on an NVIDIA GPU node, side by side with BabelStream's CUDA build
# and a pinned cudaMemcpy loop, offline, in a few minutes. Needs: a membw
# release binary (built elsewhere: no CUDA is needed to build it), nvcc and
# cmake, BabelStream's source tree, python3; numactl where the node has it.
#
#   MEMBW=./membw bench/gpu-check.sh /path/to/BabelStream [ROUNDS]
#
# Optional, in the environment:
#   SIZES="25 27 29"   array sizes, as powers of two of doubles per array
#   NTIMES=100         repetitions of each kernel, for both tools
#   MEMBW_OLD=PATH     an older membw, alternated with MEMBW on HBM (2^27)
#   MEMBW_PORTABLE=PATH the portable release binary: topo, run and check,
#                      and alternated with MEMBW on HBM (2^27)
#   LINKS=0            leave out the host-link section
#   PLACES=0           leave out --gpu-memory's places (device, managed with
#                      and without a prefetch, host and system memory on
#                      each NUMA node) beside each node's pinned copy rate
#   TORCH=0            leave out PyTorch's device copy (copy_), which runs
#                      where python3 imports torch with CUDA
#   TUNE=0             leave out `membw tune --backend cuda:0` at each size
#   WORK=DIR           where the logs, JSON and CSV go (kept; a temporary
#                      folder otherwise, its path printed)
#
# Prints: what ran (membw, BabelStream's commit and version, the GPU and
# driver); a default `membw run --backend cuda:0` and its warnings (there
# should be none); membw / BabelStream per kernel and size (best of ROUNDS
# alternated rounds each, same sizes and repetitions) with membw's share
# of the NVML peak and the launch shape it chose; membw's copy / PyTorch's
# `copy_` of the same bytes (alternated in the same rounds); every launch
# shape of `membw tune --backend cuda:0` at each size, the chosen one first; the optional builds
# alternated; h2d and d2h from the GPU's own node against the pinned loop;
# every place of the arrays (--gpu-memory) at 2^27 doubles, against device
# memory and the pinned copy rate of each node; a baseline and a timed
# check of the GPU. BabelStream's CSV is read by
# column name (`max_<unit>_per_sec`, whatever its unit): a missing column
# ends the script with an error, never a figure of 0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MEMBW=${MEMBW:-$here/../target/release/membw}
BABELSTREAM=${1:?usage: MEMBW=./membw bench/gpu-check.sh /path/to/BabelStream [ROUNDS]}
ROUNDS=${2:-3}
SIZES=${SIZES:-25 27 29}
NTIMES=${NTIMES:-100}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
section() { printf '\n== %s\n' "$*"; }
fail() { echo "gpu-check: $*" >&2; exit 1; }

section "what ran"
echo "work files: $work"
echo "membw: $("$MEMBW" --version)"
commit=$(cat "$BABELSTREAM/COMMIT" 2>/dev/null ||
  { [ -e "$BABELSTREAM/.git" ] && git -C "$BABELSTREAM" rev-parse --short HEAD; } ||
  echo "unknown (no git tree, no COMMIT file)")
echo "BabelStream: commit $commit"
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.memory --format=csv
nvcc --version | tail -2
torch=0
if [ "${TORCH:-1}" != 0 ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  torch=1
  echo "PyTorch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
  # A device-to-device copy of n doubles, `copy_` between two tensors,
  # timed by CUDA events: the best of NTIMES, as STREAM counts copy (8 B
  # read and 8 B written per element).
  cat >"$work/torch-copy.py" <<'PY'
import sys, torch
n, ntimes = int(sys.argv[1]), int(sys.argv[2])
src = torch.full((n,), 1.0, dtype=torch.float64, device="cuda")
dst = torch.empty_like(src)
dst.copy_(src)
best = float("inf")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(ntimes):
    start.record(); dst.copy_(src); end.record(); end.synchronize()
    best = min(best, start.elapsed_time(end) / 1e3)
assert torch.equal(dst, src)
print(f"copy {16 * n / best / 1e9:.1f}")
PY
fi

section "BabelStream's CUDA build"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
cmake -S "$BABELSTREAM" -B "$work/babelstream" -DMODEL=cuda -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DCUDA_ARCH="sm_$arch" >"$work/cmake.log" 2>&1 &&
  cmake --build "$work/babelstream" -j >>"$work/cmake.log" 2>&1 ||
  { tail -5 "$work/cmake.log"; fail "BabelStream does not build (see $work/cmake.log)"; }
babelstream=$(find "$work/babelstream" -type f -name 'cuda-stream' | head -1)
[ -x "$babelstream" ] || fail "no cuda-stream binary in $work/babelstream"
"$babelstream" -n 2 -s 1024 | grep -E '^(BabelStream|Version|Implementation|CUDA)' | head -5

section "a default run: membw run --backend cuda:0"
"$MEMBW" run --backend cuda:0 >"$work/default.txt" 2>"$work/default.err"
echo "exit $?"
sed -n '/^Target/,$p' "$work/default.txt"
echo "warnings printed: $(grep -c 'warning' "$work/default.err")"
cat "$work/default.err"

section "membw / BabelStream, best of $ROUNDS alternated rounds, $NTIMES repetitions"
for log2 in $SIZES; do
  n=$((1 << log2))
  for round in $(seq "$ROUNDS"); do
    "$MEMBW" run --backend cuda:0 --kernels copy,scale,add,triad,dot --array-size "$n" \
      --ntimes "$NTIMES" --format json >"$work/membw-$log2-$round.json" 2>>"$work/membw.log" ||
      fail "membw failed at 2^$log2 (see $work/membw.log)"
    "$babelstream" --csv -n "$NTIMES" -s "$n" >"$work/babelstream-$log2-$round.csv" 2>>"$work/babelstream.log" ||
      fail "BabelStream failed at 2^$log2 (see $work/babelstream.log)"
    if [ "$torch" = 1 ]; then
      python3 "$work/torch-copy.py" "$n" "$NTIMES" >"$work/torch-$log2-$round.txt" 2>>"$work/torch.log" ||
        fail "PyTorch's copy failed at 2^$log2 (see $work/torch.log)"
    fi
  done
done
python3 - "$work" "$SIZES" <<'PY' || fail "the comparison could not be read"
import csv, glob, json, math, re, sys
work, sizes = sys.argv[1], sys.argv[2].split()
ratios = []
names = {"Copy": "copy", "Mul": "scale", "Add": "add", "Triad": "triad", "Dot": "dot"}
units = {"MB": 1e6, "mbytes": 1e6, "MiB": 2**20, "mibytes": 2**20, "GB": 1e9,
         "gbytes": 1e9, "GiB": 2**30, "gibytes": 2**30, "TB": 1e12, "TiB": 2**40}
def rate_column(header):
    """BabelStream's best-rate column, whatever its unit: max_MB_per_sec
    (v5+), max_mbytes_per_sec (v4), with --gigabytes max_GB_per_sec."""
    for col in header:
        m = re.fullmatch(r"max_(\w+?)_per_sec", col)
        if m and m.group(1) in units:
            return col, units[m.group(1)]
    sys.exit(f"gpu-check: no best-rate column (max_<unit>_per_sec) in BabelStream's CSV header {header}")
print(f"{'size':<6}{'kernel':<7}{'membw GB/s':>11}{'BabelStream':>12}{'ratio':>8}{'% peak':>8}  launch membw chose")
worst = None
for log2 in sizes:
    membw, babel, peak, shapes = {}, {}, None, {}
    for f in sorted(glob.glob(f"{work}/membw-{log2}-*.json")):
        doc = json.load(open(f))
        m = doc["measurement"]
        if not m["validation"]["passed"]:
            sys.exit(f"gpu-check: membw failed validation in {f}")
        peak = m["target"].get("peaks", {}).get("memory_gb_s")
        for r in m["results"]:
            k = r["kernel"]
            membw[k] = max(membw.get(k, 0), r["best_rate_mb_s"] / 1e3)
            launch = r.get("launch") or {}
            shapes[k] = launch.get("id") or launch.get("shape", "-")
    for f in sorted(glob.glob(f"{work}/babelstream-{log2}-*.csv")):
        # BabelStream prints its device lines before the CSV: the table
        # starts at its header row.
        rows = list(csv.reader(open(f)))
        start = next((i for i, r in enumerate(rows) if r and r[0] == "function"), None)
        if start is None:
            sys.exit(f"gpu-check: no CSV header (function,...) in {f}")
        rows = rows[start:]
        header = rows[0]
        col, scale = rate_column(header)
        for row in rows[1:]:
            rec = dict(zip(header, row))
            k = names.get(rec.get("function", ""))
            if k:
                babel[k] = max(babel.get(k, 0), float(rec[col]) * scale / 1e9)
    for k in ["copy", "scale", "add", "triad", "dot"]:
        if k not in membw or k not in babel:
            sys.exit(f"gpu-check: {k} missing at 2^{log2}: membw {sorted(membw)}, BabelStream {sorted(babel)}")
        m, b = membw[k], babel[k]
        share = f"{100 * m / peak:.1f}" if peak else "-"
        worst = min(worst or 9, m / b)
        print(f"2^{log2:<4}{k:<7}{m:>11.1f}{b:>12.1f}{m / b:>8.3f}{share:>8}  {shapes[k]}")
        ratios.append(m / b)
    torch = [float(l.split()[1]) for f in glob.glob(f"{work}/torch-{log2}-*.txt")
             for l in open(f) if l.startswith("copy ")]
    if torch:
        t = max(torch)
        print(f"2^{log2:<4}copy: membw {membw['copy']:.1f} GB/s, PyTorch copy_ {t:.1f} GB/s, "
              f"ratio {membw['copy'] / t:.3f}" + (f", {100 * t / peak:.1f} % of peak" if peak else ""))
    print(f"NVML memory peak: {peak} GB/s" if peak else "NVML memory peak: unknown")
print(f"lowest membw / BabelStream ratio: {worst:.3f}; geometric mean {math.prod(ratios) ** (1 / len(ratios)):.3f}")
PY

if [ "${TUNE:-1}" != 0 ]; then
  for log2 in $SIZES; do
    section "membw tune --backend cuda:0 at 2^$log2 doubles: every launch shape"
    "$MEMBW" tune --backend cuda:0 --array-size $((1 << log2)) --ntimes "$NTIMES" --format jsonl \
      >"$work/tune-$log2.json" 2>>"$work/membw.log" || fail "membw tune failed at 2^$log2 (see $work/membw.log)"
    python3 - "$work/tune-$log2.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
peak = doc.get("peak_gb_s")
for k in doc["kernels"]:
    shapes = k["shapes"]
    default = next(s for s in shapes if s["id"] == k["default"])
    wrong = [s["id"] for s in shapes if s.get("invalid")]
    verdict = (f"not resolved (noise {100 * k['kept_within']:.0f} %)" if k.get("kept_within") is not None
               else f"chosen {k['chosen']}")
    print(f"{k['kernel']:<6} {verdict}; run {k['run_gb_s']:.1f} GB/s"
          + (f" ({100 * k['run_gb_s'] / peak:.1f} % of peak)" if peak else "")
          + f"; default {default['id']} {default['best_gb_s']:.1f}; wrong: {', '.join(wrong) or 'none'}")
    for s in shapes[:4]:
        print(f"    {s['id']:<24} {s['best_gb_s']:8.1f} GB/s")
PY
  done
fi

# Two membw builds alternated on the GPU's memory (2^27 doubles): best of
# each, their ratio per kernel.
alternate() {
  local a=$1 b=$2 label=$3
  for round in $(seq "$ROUNDS"); do
    for side in a b; do
      local bin=$a
      [ "$side" = b ] && bin=$b
      "$bin" run --backend cuda:0 --kernels copy,triad,dot --array-size $((1 << 27)) \
        --ntimes "$NTIMES" --format json >"$work/$label-$side-$round.json" 2>>"$work/membw.log"
    done
  done
  python3 - "$work" "$label" <<'PY'
import glob, json, sys
work, label = sys.argv[1], sys.argv[2]
best = {"a": {}, "b": {}}
for side in best:
    for f in glob.glob(f"{work}/{label}-{side}-*.json"):
        for r in json.load(open(f))["measurement"]["results"]:
            best[side][r["kernel"]] = max(best[side].get(r["kernel"], 0), r["best_rate_mb_s"] / 1e3)
for k in sorted(best["a"]):
    a, b = best["a"][k], best["b"].get(k, 0)
    print(f"  {k:<6} {a:>8.1f} {b:>8.1f} GB/s   second/first {b / a:.3f}" if a else f"  {k}: -")
PY
}

if [ -n "${MEMBW_OLD:-}" ]; then
  section "MEMBW_OLD then MEMBW alternated, 2^27 doubles (best of $ROUNDS)"
  echo "old: $("$MEMBW_OLD" --version)"
  alternate "$MEMBW_OLD" "$MEMBW" old-new
fi

if [ -n "${MEMBW_PORTABLE:-}" ]; then
  section "the portable binary: $MEMBW_PORTABLE"
  echo "highest glibc symbol it needs: $(objdump -T "$MEMBW_PORTABLE" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
  echo "this node's glibc: $(ldd --version | head -1)"
  "$MEMBW_PORTABLE" --version
  "$MEMBW_PORTABLE" topo | sed -n '/^GPUs/,/^$/p'
  "$MEMBW_PORTABLE" run --backend cuda:0 >"$work/portable.txt" 2>"$work/portable.err"
  echo "run exit $?, warnings printed: $(grep -c 'warning' "$work/portable.err")"
  grep -E '^(Triad|Copy):' "$work/portable.txt"
  "$MEMBW_PORTABLE" check --backend cuda:0 >"$work/portable-check.txt" 2>&1
  echo "check exit $?"; head -3 "$work/portable-check.txt"
  section "MEMBW then the portable binary alternated, 2^27 doubles (best of $ROUNDS)"
  alternate "$MEMBW" "$MEMBW_PORTABLE" release-portable
fi

if [ "${LINKS:-1}" != 0 ]; then
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
    if not peer.get(k):
        sys.exit(f"gpu-check: the pinned loop printed no {k} rate")
    m, p = membw.get(k, 0), peer[k]
    print(f"{k}: membw {m:.2f} GB/s, pinned cudaMemcpy {p:.2f} GB/s, ratio {m / p:.3f}")
PY
fi

if [ "${PLACES:-1}" != 0 ]; then
  # Where the arrays live (--gpu-memory), 2^27 doubles each, beside the
  # pinned copy rate of each host node: device memory, managed memory with
  # and without a prefetch, pinned host memory mapped into the GPU on each
  # node, and pageable system memory where the driver reads it.
  section "where the arrays live: membw run --gpu-memory PLACE, 2^27 doubles (best of $ROUNDS)"
  [ -x "$work/pinned-copy" ] || nvcc -O2 -o "$work/pinned-copy" "$here/pinned-copy.cu" 2>"$work/nvcc.log" || cat "$work/nvcc.log"
  nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | sed 's/.*node//' | sort -n | tr '\n' ' ')
  places="device managed managed:prefetch"
  for n in ${nodes:-0}; do places="$places host:$n system:$n"; done
  for round in $(seq "$ROUNDS"); do
    for place in $places; do
      "$MEMBW" run --backend cuda:0 --gpu-memory "$place" --kernels copy,triad --array-size $((1 << 27)) \
        --ntimes 20 --format json >"$work/place-${place/:/-}-$round.json" 2>"$work/place-${place/:/-}-$round.err" ||
        head -1 "$work/place-${place/:/-}-$round.err" >"$work/place-${place/:/-}.refused"
    done
    for n in ${nodes:-0}; do
      bind=()
      command -v numactl >/dev/null && bind=(numactl --cpunodebind "$n" --membind "$n")
      "${bind[@]}" "$work/pinned-copy" $((1 << 30)) 10 5 >"$work/place-pinned-$n-$round.txt" 2>/dev/null
    done
  done
  python3 - "$work" $places <<'PY'
import glob, json, os, sys
work, places = sys.argv[1], sys.argv[2:]
def best(place):
    rates, used = {}, None
    for f in glob.glob(f"{work}/place-{place.replace(':', '-')}-*.json"):
        try:
            m = json.load(open(f))["measurement"]
        except (ValueError, KeyError):
            continue
        used = m.get("gpu_memory", used)
        for r in m["results"]:
            rates[r["kernel"]] = max(rates.get(r["kernel"], 0), r["best_rate_mb_s"] / 1e3)
    return rates, used
def pinned(node):
    rates = {}
    for f in glob.glob(f"{work}/place-pinned-{node}-*.txt"):
        for line in open(f):
            if len(line.split()) == 2:
                k, v = line.split()
                rates[k] = max(rates.get(k, 0), float(v))
    return rates
device = best("device")[0]
print(f"  {'place':<18} {'copy':>8} {'triad':>8} GB/s  triad/device  first touch  found")
for place in places:
    rates, used = best(place)
    refused = f"{work}/place-{place.replace(':', '-')}.refused"
    if not rates:
        why = open(refused).read().strip() if os.path.exists(refused) else "no result"
        print(f"  {place:<18} refused: {why}")
        continue
    touch = (used or {}).get("first_touch")
    touch = f"{touch['bytes'] / touch['seconds'] / 1e9:8.1f} GB/s" if touch and touch["seconds"] else "       -"
    found = ",".join(sorted({a.get("driver", "?") for a in (used or {}).get("found", [])}))
    ratio = rates.get("triad", 0) / device["triad"] if device.get("triad") else 0
    print(f"  {place:<18} {rates.get('copy', 0):8.1f} {rates.get('triad', 0):8.1f}       {ratio:7.3f}  {touch}  {found}")
    if place.startswith("host:"):
        link = pinned(place.split(":")[1])
        if link.get("h2d"):
            print(f"    pinned cudaMemcpy on node {place.split(':')[1]}: h2d {link['h2d']:.1f}, d2h {link.get('d2h', 0):.1f} GB/s;"
                  f" triad / h2d {rates.get('triad', 0) / link['h2d']:.3f}"
                  f" (triad reads 16 B an element over h2d and writes 8 over d2h: 1.5 at full duplex)")
PY
fi

section "baseline and check of cuda:0"
"$MEMBW" baseline --backend cuda:0 --rounds 3 -o "$work/gpu-baseline.json" >/dev/null 2>"$work/baseline.err" ||
  { cat "$work/baseline.err"; fail "no baseline"; }
start=$EPOCHREALTIME
"$MEMBW" check --backend cuda:0 --baseline "$work/gpu-baseline.json"
code=$?
echo "check exit: $code, in $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }") s"
