# (b) 1 socket split into 4 NUMA nodes, distances 10/12: an NPS4-style part.
QEMU_SMP="4,sockets=1,cores=4,threads=1"
QEMU_NODES="0:0:256M 1:1:256M 2:2:256M 3:3:256M"
QEMU_DIST="0,1,12 0,2,12 0,3,12 1,2,12 1,3,12 2,3,12"

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run interleave membw run --size 256k --ntimes 3 --json --mem interleave:all
run bind3 membw run --size 256k --ntimes 3 --json --mem bind:3
run pernuma membw run --size 256k --ntimes 2 --json --strategy per-numa=1
run mscatter membw run --size 256k --ntimes 2 --json --pin M:scatter --threads 2
run latmatrix membw latency --numa-matrix --sizes 1MiB --time 20ms --format json
run health membw check --size 20MiB --ntimes 3 --tolerance 90% --budget 20s --format json
CMDS
}
