# (a) 2 sockets × 2 cores × 2 hardware threads, one NUMA node per socket,
# distances 10/21: a classic dual-socket Intel node in miniature.
QEMU_SMP="8,sockets=2,cores=2,threads=2"
QEMU_NODES="0:0-3:512M 1:4-7:512M"
QEMU_DIST="0,1,21"
# No emulated L3: with TCG's 16 MiB L3 per socket the node's caches are
# 48 MiB, and STREAM's rule (each array >= 4 x the caches) would need three
# 193 MiB arrays per node for the health check, past the 512 MiB nodes and
# the check's budget under emulation. The L2s (4 MiB per core) remain.
QEMU_CPU_FLAGS=",l3-cache=off"
# One host thread runs the 8 vCPUs in turn, as in many-cpus.sh: with a
# thread each, on a 2-core host beside the other guest and the suite, the
# guest's first command (topo) never ended in the clean-clone CI of
# 02a0b41 (its 300 s ran out, the console silent); alone, the whole guest
# took 78 s that way and 98 s in turns.
QEMU_ACCEL="tcg,thread=single"

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run bind1 membw run --size 256k --ntimes 3 --json --mem bind:1
run interleave membw run --size 256k --ntimes 3 --json --mem interleave:all
run interleave16never membw run --size 2M --ntimes 2 --json --kernels copy --mem interleave:all --hugepages never
run interleave16thp membw run --size 2M --ntimes 2 --json --kernels copy --mem interleave:all --hugepages thp
run interleave64thp membw run --size 8M --ntimes 2 --json --kernels copy --mem interleave:all --hugepages thp
run preferred1 membw run --size 256k --ntimes 3 --json --mem preferred:1
run per-array membw run --size 256k --ntimes 3 --json --mem a=bind:0,b=bind:1,c=interleave:all
run local membw run --size 256k --ntimes 3 --json --strategy per-numa=1
run inherit1 numactl --cpunodebind 0 --membind 1 membw run --size 256k --ntimes 3 --json
run inherit1text numactl --cpunodebind 0 --membind 1 membw run --size 256k --ntimes 3
run spread2 membw run --size 256k --ntimes 2 --json --strategy spread --threads 2
run compact2 membw run --size 256k --ntimes 2 --json --strategy compact --threads 2
run compact2smt membw run --size 256k --ntimes 2 --json --strategy compact --threads 2 --smt
run places membw run --size 256k --ntimes 2 --json --places '{0}:2:4'
run likwid membw run --size 256k --ntimes 2 --json --pin S1:0-1
run nonode membw run --size 256k --mem bind:7
run execbind1 membw exec --mem bind:1 --format json -- membw run --size 1M --ntimes 4
run execcpu1 membw exec --cpus 1 --format json -- membw run --size 1M --ntimes 4
run simhost0 membw run --backend sim:0 --kernels transfers --size 256k --ntimes 3 --json --mem bind:0
run simhost1 membw run --backend sim:0 --kernels transfers --size 256k --ntimes 3 --json --mem bind:1
run simsweep membw sweep --backend sim:1 --kernels transfers --size 256k --ntimes 3 --mem bind:0 --mem bind:1 -o /tmp/simsweep.jsonl --format jsonl
run health membw check --size 66MiB --ntimes 3 --tolerance 90% --budget 20s --format json
CMDS
}
