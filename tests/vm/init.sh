#!/bin/busybox sh
# PID 1 of the test guest: mount the pseudo file systems, run the shape's
# commands, write each one's output to the second serial port between
# markers, and power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
out=/dev/ttyS1
# Seconds a command may run before the guest describes it and kills it
# (commands.sh sets it: the shape's, or half the guest's limit): a hang
# then costs that, not the whole guest's limit, and says where each
# thread was.
cmd_limit=300

# What every thread of process $1 is doing: its state, the CPU it last ran
# on, its user and system ticks, the syscall it is in and where the kernel
# has it waiting. Taken twice, 2 s apart: ticks that grow are spinning.
describe() {
    target=$1
    for look in 1 2; do
        echo "@@@HUNG look $look at pid $target: $(cat /proc/loadavg)"
        for t in /proc/"$target"/task/*; do
            # stat's fields after the name: 3 state, 14 utime, 15 stime, 39 cpu.
            set -- $(sed 's/.*) //' "$t/stat")
            echo "@@@HUNG tid=${t##*/} ($(cat "$t/comm")) state=$1 utime=${12} stime=${13} cpu=${37}" \
                "syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" \
                "wchan=$(cat "$t/wchan" 2>/dev/null)"
        done
        [ "$look" = 2 ] || sleep 2
    done
}

# run NAME CMD...: stdout and stderr of CMD, framed for the host to split.
run() {
    name=$1
    shift
    started=$(date +%s)
    # A command that never ends still says it began (check.py names it).
    echo "@@@STARTED $name" >"$out"
    "$@" >/tmp/stdout 2>/tmp/stderr &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if [ $(( $(date +%s) - started )) -ge "$cmd_limit" ]; then
            # The first task is the shell's child; membw is it or under it.
            for p in $pid $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
                describe "$p" >"$out"
            done
            kill -9 $(cat /proc/"$pid"/task/*/children 2>/dev/null) "$pid" 2>/dev/null
            echo "@@@HUNG killed after ${cmd_limit}s" >"$out"
            break
        fi
        sleep 1
    done
    wait "$pid"
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
