#!/usr/bin/env bash
# Boots a real Linux kernel under QEMU in each guest shape (sockets, cores,
# SMT, NUMA nodes and distances), runs membw inside, and checks on the host
# that topology, pinning and memory policy came out as QEMU was told.
#
#   tests/vm/run.sh [SHAPE...]      default: every tests/vm/shapes/*.sh
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped because
# qemu-system-x86_64, a kernel in /boot, a static busybox, cpio or python3
# is missing (Debian: qemu-system-x86 linux-image-amd64 busybox-static cpio).
# Bandwidth inside an emulated guest means nothing; nothing asserts on it.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/vm
out=${MEMBW_VM_OUT:-target/vm}

skip() { echo "SKIP: $*" >&2; exit 77; }
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found (Debian package qemu-system-x86)"
kernel=${MEMBW_VM_KERNEL:-$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)}
[ -n "$kernel" ] && [ -r "$kernel" ] || skip "no readable kernel in /boot (Debian package linux-image-amd64)"
busybox=${MEMBW_VM_BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || skip "no busybox at $busybox (Debian package busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then skip "$busybox is dynamically linked (Debian package busybox-static)"; fi
command -v cpio >/dev/null || skip "cpio not found"
command -v python3 >/dev/null || skip "python3 not found"

# A static-pie membw runs in the initramfs without any library: built
# here, or the one MEMBW_VM_BINARY names (the release's, from
# contrib/release/release.sh), which must need no library either.
if [ -n "${MEMBW_VM_BINARY:-}" ]; then
    membw=$MEMBW_VM_BINARY
    [ -x "$membw" ] || { echo "MEMBW_VM_BINARY: $membw is not an executable" >&2; exit 2; }
    if readelf -d "$membw" | grep -q NEEDED; then
        echo "MEMBW_VM_BINARY: $membw needs shared libraries; the guest has none" >&2; exit 1
    fi
else
    echo "building a static membw ..." >&2
    RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --quiet \
        --target x86_64-unknown-linux-gnu --target-dir target/vm-build
    membw=target/vm-build/x86_64-unknown-linux-gnu/release/membw
fi

shapes=("$@")
if [ ${#shapes[@]} -eq 0 ]; then
    # The 64-vCPU guest, the longest, first (two run at a time, below).
    shapes=(many-cpus)
    for f in "$here"/shapes/*.sh; do
        [ "$(basename "$f")" = many-cpus.sh ] || shapes+=("$(basename "$f" .sh)")
    done
fi

mkdir -p "$out"
# The guests' loops per jiffy (see the guest's command line below): the
# host's fastest clock in MHz, from cpuinfo or cpufreq, in cycles per jiffy
# at HZ=250. Too high only makes a udelay longer. Empty (the guest
# calibrates) where neither is readable.
host_mhz=$(cat /sys/devices/system/cpu/cpu*/cpufreq/cpuinfo_max_freq 2>/dev/null |
    awk '{ print $1 / 1000 }'; awk -F: '/^cpu MHz/ { print $2 }' /proc/cpuinfo)
lpj=$(awk 'NF && $1 > m { m = $1 } END { if (m > 0) printf "%d", m * 1e6 / 250 }' <<<"$host_mhz")

# The kernel a shape boots. A shape that needs Linux 6.9+ (weighted
# interleave) boots the backports kernel tests/vm/get-kernel.sh unpacks.
# Asked of every shape before any guest starts, so that a missing kernel
# skips the whole run rather than one guest in the middle of it.
kernel_of() {
    local QEMU_KERNEL=
    # shellcheck source=/dev/null
    source "$here/shapes/$1.sh"
    if [ "${QEMU_KERNEL:-}" = new ]; then
        echo "${MEMBW_VM_NEW_KERNEL:-$(ls -1 target/vm-kernel/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)}"
    else
        echo "$kernel"
    fi
}
for shape in "${shapes[@]}"; do
    [ -r "$here/shapes/$shape.sh" ] || { echo "unknown shape '$shape' (see $here/shapes/)" >&2; exit 2; }
    guest_kernel=$(kernel_of "$shape")
    [ -n "$guest_kernel" ] && [ -r "$guest_kernel" ] ||
        skip "shape '$shape' needs Linux 6.9+: run tests/vm/get-kernel.sh (bookworm-backports' 6.12, unpacked, not installed)"
done

# One guest: its initramfs, its boot, and the host's checks of what it
# printed. Run in a subshell of its own (its shape's variables stay there).
guest() {
    local shape=$1
    # shellcheck source=/dev/null
    source "$here/shapes/$shape.sh"
    guest_kernel=$(kernel_of "$shape")
    dir="$out/$shape"
    rm -rf "$dir"
    mkdir -p "$dir/root/bin" "$dir/root/proc" "$dir/root/sys" "$dir/root/dev" "$dir/root/tmp"
    cp "$busybox" "$dir/root/bin/busybox"
    cp "$membw" "$dir/root/bin/membw"
    # numactl with the libraries it loads, at their host paths: the guest
    # runs the classic `numactl --cpunodebind 0 --membind 1 membw run`.
    if numactl=$(command -v numactl); then
        cp "$numactl" "$dir/root/bin/numactl"
        for lib in $(ldd "$numactl" | grep -o '/[^ ]*'); do
            mkdir -p "$dir/root$(dirname "$lib")"
            cp -L "$lib" "$dir/root$lib"
        done
    fi
    cp "$here/init.sh" "$dir/root/init"
    chmod +x "$dir/root/init"
    {
        # Each command's limit: the shape's, else half the guest's, so
        # that a hung command is described and killed before QEMU is.
        echo "cmd_limit=${GUEST_CMD_LIMIT:-$((${QEMU_TIMEOUT:-300} / 2))}"
        guest_commands
    } >"$dir/root/commands.sh"
    (cd "$dir/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/initramfs.gz"

    # NUMA nodes: "id:cpus:size[:initiator]" (cpus empty for a memory-only
    # node; the initiator, the node whose CPUs reach it best, for HMAT).
    numa=()
    total=0
    for node in $QEMU_NODES; do
        IFS=: read -r id cpus size initiator <<<"$node"
        numa+=(-object "memory-backend-ram,id=m$id,size=$size")
        extra=${initiator:+,initiator=$initiator}
        if [ -n "$cpus" ]; then
            numa+=(-numa "node,nodeid=$id,cpus=$cpus,memdev=m$id$extra")
        else
            numa+=(-numa "node,nodeid=$id,memdev=m$id$extra")
        fi
        total=$((total + ${size%M}))
    done
    for d in $QEMU_DIST; do
        IFS=, read -r src dst val <<<"$d"
        numa+=(-numa "dist,src=$src,dst=$dst,val=$val")
    done
    # Firmware figures (ACPI HMAT): each a -numa hmat-lb or hmat-cache value.
    for h in ${QEMU_HMAT:-}; do
        numa+=(-numa "$h")
    done

    # tsc=reliable: TCG's TSC follows the host's clock, but on a loaded host
    # the kernel's clocksource watchdog can find it skewed against the HPET
    # and switch to the HPET, whose every read is an emulated MMIO access:
    # membw reads the clock often (seen here: the watchdog's HPET read-back
    # delays in the 64-vCPU guest; suspected in the CI run where that guest
    # ran past 15 minutes, 4 here). loglevel=4 keeps the kernel's warnings
    # (a lockup, the OOM killer) in console.log, which a timeout prints.
    # lpj= skips each CPU's delay-loop calibration, which TCG stretches to
    # about a second a CPU (udelay counts TSC cycles, not loops, here):
    # the 64-vCPU guest booted in 25 s with it, 73 s without. TCG's TSC
    # ticks at the host's rate, so lpj is the host's TSC cycles per jiffy
    # (HZ=250 in Debian's kernels): a udelay then lasts what it asks for
    # on any host, never less.
    echo "booting '$shape': -smp $QEMU_SMP, nodes $QEMU_NODES, lpj=${lpj:-calibrated}" >&2
    started=$(date +%s)
    # QEMU 10's TCG has aborted once in CI 5 s into a guest that boots
    # fine on every other run (exit 134, SIGABRT; the guest had printed
    # nothing). A crash of QEMU itself, not a timeout (124) or a failing
    # guest, boots the guest once more, and says so with QEMU's own words.
    local attempt rc
    for attempt in 1 2; do
        rc=0
        timeout "${QEMU_TIMEOUT:-300}" qemu-system-x86_64 -accel "${QEMU_ACCEL:-tcg}" -machine "${QEMU_MACHINE:-q35}" -cpu "max,vendor=GenuineIntel${QEMU_CPU_FLAGS:-}" \
            -smp "$QEMU_SMP" -m "${total}M" "${numa[@]}" \
            -kernel "$guest_kernel" -initrd "$dir/initramfs.gz" \
            -append "console=ttyS0 quiet loglevel=4 panic=-1 tsc=reliable ${lpj:+lpj=$lpj} ${QEMU_APPEND:-}" \
            -display none -no-reboot \
            -serial "file:$dir/console.log" -serial "file:$dir/results.txt" \
            >"$dir/qemu.log" 2>&1 || rc=$?
        [ "$rc" = 0 ] && break
        echo "qemu exited with $rc (see $dir/qemu.log)" >&2
        tail -n 5 "$dir/qemu.log" | sed 's/^/  qemu: /' >&2
        # CI keeps only this output: the guest kernel's last words (a soft
        # lockup, the OOM killer) and the command that was running.
        tail -n 20 "$dir/console.log" | sed 's/^/  console: /' >&2
        grep -a '^@@@STARTED' "$dir/results.txt" | tail -n 1 | sed 's/^/  last begun: /' >&2 || true
        # 128 + a signal other than timeout's KILL: QEMU crashed.
        if [ "$attempt" = 1 ] && [ "$rc" -gt 128 ] && [ "$rc" != 137 ]; then
            echo "  QEMU itself crashed: booting '$shape' once more" >&2
            continue
        fi
        break
    done
    echo "  guest ran $(( $(date +%s) - started )) s" >&2
    python3 "$here/check.py" "$shape" "$dir/results.txt"
}

# Two guests at a time, each in its own subshell and log, printed in the
# order given when all have ended. The guests leave a host core idle much
# of the time: a 64-vCPU kernel brings its CPUs up one by one, and most
# commands of the small shapes run one thread (the NUMA health check one
# domain at a time). Two at once took the bed from 395 s to about 300 s
# on the 2-vCPU CI VM; nothing in a guest asserts on time or bandwidth
# (the health checks' tolerance is 90 %).
parallel=${MEMBW_VM_PARALLEL:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
declare -A pid_shape=()
status=0
reap() {
    local done_pid rc=0
    wait -n -p done_pid "${!pid_shape[@]}" || rc=$?
    echo "$rc" >"$logs/${pid_shape[$done_pid]}.rc"
    unset "pid_shape[$done_pid]"
}
for shape in "${shapes[@]}"; do
    while [ "${#pid_shape[@]}" -ge "$parallel" ]; do reap; done
    (guest "$shape") >"$logs/$shape.log" 2>&1 &
    pid_shape[$!]=$shape
done
while [ "${#pid_shape[@]}" -gt 0 ]; do reap; done
# Every guest's log, also kept in $out/guests.log: CI prints the failures
# and timings from it last, where its truncated output still shows them.
: >"$out/guests.log"
for shape in "${shapes[@]}"; do
    tee -a "$out/guests.log" <"$logs/$shape.log"
    [ "$(cat "$logs/$shape.rc")" = 0 ] || status=1
done
exit $status
