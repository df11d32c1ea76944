# (e) 64 vCPUs: 2 sockets × 16 cores × 2 hardware threads, one NUMA node
# per socket. The hot path at a thread count this VM cannot show (the
# barrier, the per-thread slots, the team), checked for correctness only:
# TCG on two host cores makes every timing meaningless, and 64 busy vCPUs
# on them make every step slow, so the commands are kept few and small (and
# of the c2c file only what the checks read crosses the serial port), and
# run leaves out its side measurement of the other store mode (which
# doubled its time: CI's guest ran out of time in it); run measures add
# and scale and the sweep copy and triad, so that each kernel runs on all
# 64 CPUs once. The c2c study runs on four CPUs (taskset): a pair of SMT
# siblings, a same-socket and a cross-socket CPU, the relations the
# guest's real topology gives, in 6 pairs. The 561 pairs it once ran (34
# CPUs, for the grouped table past 32) took this guest past its 25-minute
# limit in CI. The grouped table is unit-tested
# on records (report/c2c.rs).
QEMU_SMP="64,sockets=2,cores=16,threads=2"
QEMU_NODES="0:0-31:512M 1:32-63:512M"
QEMU_DIST="0,1,21"
# The guest kernel's Meltdown and Spectre mitigations (page-table isolation,
# retpolines) make every syscall and interrupt flush TCG's TLB: the 64-thread
# run took 57 s with them, 33 s without. Only here: nothing in this guest
# judges a thread's rate, while without them two-socket-smt's health check
# found one vCPU at 5 % of the others' rate (emulation, not membw) in both runs.
QEMU_APPEND="mitigations=off"
# One host thread runs the 64 vCPUs in turn (TCG's round robin), not one
# host thread each. With a thread each, 64 threads shared the 2 host cores
# with the other guest: a team barrier took 440 ms (every member's vCPU
# had to be scheduled by the host in turn), the 64-thread run 45-50 s
# here, and in two CI runs of 386d81d's successors it never ended in the
# guest's 25 minutes, the console silent. In turns, the barrier took
# 47 us, the run 12 s and the guest 75 s, and the other guest keeps a
# host core to itself.
QEMU_ACCEL="tcg,thread=single"
# The guest's limit leaves room for a busy host; a command that hangs is
# described (every thread's state, twice) and killed after 2 minutes.
QEMU_TIMEOUT=600
GUEST_CMD_LIMIT=120

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run allcpus membw run --size 64k --ntimes 2 --json --smt --threads 64 --no-stores-check --kernels add,scale
run sweep membw sweep --threads 16,64 --smt --size 64k --ntimes 2 --kernels copy,triad -o /tmp/sweep.jsonl
run sweepfile cat /tmp/sweep.jsonl
run c2c taskset -c 0,1,2,32 membw latency --c2c modified --time 1ms -o /tmp/c2c.jsonl
run c2cfile grep -oE '"point":\{[^}]*\}|"p50_ns":[^,]*|"relation":"[^"]*"' /tmp/c2c.jsonl
CMDS
}
