#!/bin/busybox sh
# PID 1 of the test guest: mount the pseudo file systems, run the shape's
# commands, write each one's output to the second serial port between
# markers, and power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
out=/dev/ttyS1

# run NAME CMD...: stdout and stderr of CMD, framed for the host to split.
run() {
    name=$1
    shift
    started=$(date +%s)
    # A command that never ends still says it began (check.py names it).
    echo "@@@STARTED $name" >"$out"
    "$@" >/tmp/stdout 2>/tmp/stderr
    rc=$?
    {
        echo "@@@BEGIN $name"
        cat /tmp/stdout
        echo "@@@STDERR $name"
        cat /tmp/stderr
        echo "@@@END $name t=$(( $(date +%s) - started ))s rc=$rc"
    } >"$out"
}

. /commands.sh
echo "@@@DONE" >"$out"
sync
poweroff -f
