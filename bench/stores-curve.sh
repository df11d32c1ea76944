#!/usr/bin/env bash
# `--stores auto` against both forced modes across array sizes: from half
# the L2 to 8 × the last-level cache (per array, log-spaced), each size run
# with auto, regular and nt in alternated rounds (the order rotates each
# round). Prints, per kernel and size, each mode's median best rate over the
# rounds and auto's ratio to the better forced mode; with OLD, also the old
# binary's auto copy at 100,000,000 elements beside the new one's, in the
# same rounds. docs/guide/node-bandwidth.md keeps this host class's table.
#
#   bench/stores-curve.sh NEW [OLD] [ROUNDS] [SIZES] [membw run options...]
#   e.g. bench/stores-curve.sh target/release/membw /tmp/membw-old 5 14 --no-stores-check
#
# Repetitions per run (unless --ntimes is given): 6 from 128 MiB an array,
# more below it (up to 100), so that a best of a few microseconds' kernels
# is not one lucky repetition.
#
# Needs memory for three arrays of 8 × the last-level cache (11.3 GiB on a
# 480 MiB L3). The caches are this host's sysfs: cpu0's L2 and its largest
# level, one instance of each.
set -euo pipefail
cd "$(dirname "$0")/.."
new=$1
old=${2:-}
rounds=${3:-5}
count=${4:-14}
shift $(($# < 4 ? $# : 4))
[ -n "$old" ] && [ "$old" != - ] || old=
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

python3 - "$new" "$old" "$rounds" "$count" "$out" "$@" <<'EOF'
import glob, json, math, os, statistics, subprocess, sys

new, old, rounds, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
extra = sys.argv[6:]

def size_of(text):
    text = text.strip()
    unit = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}.get(text[-1], 1)
    return int(text.rstrip('KMG')) * unit

caches = {}
for index in glob.glob('/sys/devices/system/cpu/cpu0/cache/index*'):
    kind = open(index + '/type').read().strip()
    if kind == 'Instruction':
        continue
    caches[int(open(index + '/level').read())] = size_of(open(index + '/size').read())
l2, llc = caches[2], caches[max(caches)]
low, high = l2 // 2, 8 * llc
sizes = sorted({int(low * (high / low) ** (i / (count - 1))) // 8 for i in range(count)})
print(f'# caches of cpu0: L2 {l2 >> 10} KiB, last level {llc >> 20} MiB; '
      f'{len(sizes)} sizes per array from {low >> 10} KiB to {high >> 20} MiB; '
      f'{rounds} alternated rounds; options: {" ".join(extra) or "(none)"}', flush=True)

KERNELS = ['copy', 'scale', 'add', 'triad']

def run(binary, elements, stores):
    """Best rate (GB/s) of each kernel, and what auto chose for each."""
    ntimes = [] if '--ntimes' in extra else ['--ntimes', str(max(6, min(100, (1 << 30) // (elements * 8))))]
    cmd = [binary, 'run', '--format', 'json', '--size', str(elements), '--stores', stores, *ntimes, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f'{" ".join(cmd)}: exit {done.returncode}: {done.stderr.strip()[-400:]}')
    results = json.loads(done.stdout)['measurement']['results']
    rates = {r['kernel']: r['best_rate_mb_s'] / 1e3 for r in results}
    chose = {r['kernel']: (r.get('stores') or {}).get('mode', '?') for r in results}
    return rates, chose

MODES = ['auto', 'regular', 'nt']
table = {}
for elements in sizes:
    got = {m: [] for m in MODES}
    picks = []
    for rnd in range(rounds):
        order = MODES[rnd % 3:] + MODES[:rnd % 3]
        for mode in order:
            rates, chose = run(new, elements, mode)
            got[mode].append(rates)
            if mode == 'auto':
                picks.append(chose)
    med = {m: {k: statistics.median(r[k] for r in got[m]) for k in KERNELS} for m in MODES}
    pick = {k: '/'.join(sorted({p[k] for p in picks})) for k in KERNELS}
    table[elements] = (med, pick)
    mib = elements * 8 / 2**20
    cells = '  '.join(f'{k} {med["auto"][k]:6.1f} {med["regular"][k]:6.1f} {med["nt"][k]:6.1f} '
                      f'{med["auto"][k] / max(med["regular"][k], med["nt"][k]):5.3f} {pick[k]:>11}'
                      for k in KERNELS)
    print(f'{elements:>11} {mib:9.1f} MiB  {cells}', flush=True)

print()
print('| elements per array | MiB per array | kernel | auto GB/s | regular GB/s | nt GB/s '
      '| auto ÷ better forced | auto ran |')
print('|---:|---:|---|---:|---:|---:|---:|---|')
worst = {}
for elements, (med, pick) in table.items():
    for k in KERNELS:
        ratio = med['auto'][k] / max(med['regular'][k], med['nt'][k])
        worst[k] = min(worst.get(k, 9.9), ratio)
        print(f'| {elements:,} | {elements * 8 / 2**20:.1f} | {k} | {med["auto"][k]:.1f} '
              f'| {med["regular"][k]:.1f} | {med["nt"][k]:.1f} | {ratio:.3f} | {pick[k]} |')
print()
print('lowest auto ÷ better forced, by kernel: ' +
      ', '.join(f'{k} {v:.3f}' for k, v in worst.items()))

if old:
    a, b = [], []
    for rnd in range(rounds):
        for side in (['old', 'new'] if rnd % 2 == 0 else ['new', 'old']):
            rates, _ = run(old if side == 'old' else new, 100_000_000, 'auto')
            (a if side == 'old' else b).append(rates['copy'])
    ratios = [y / x for x, y in zip(a, b)]
    print(f'auto copy at 100,000,000 elements, {rounds} alternated rounds: '
          f'old median {statistics.median(a):.1f} GB/s, new median {statistics.median(b):.1f} GB/s, '
          f'new/old median of rounds {statistics.median(ratios):.3f}')
EOF
