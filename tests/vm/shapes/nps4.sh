# (b) 1 socket split into 4 NUMA nodes, distances 10/12: an NPS4-style part.
QEMU_SMP="4,sockets=1,cores=4,threads=1"
QEMU_NODES="0:0:384M 1:1:384M 2:2:384M 3:3:384M"
QEMU_DIST="0,1,12 0,2,12 0,3,12 1,2,12 1,3,12 2,3,12"
# No emulated L3, as in two-socket-smt: with TCG's 16 MiB L3 the node's
# caches are 32 MiB and STREAM's rule would ask the health check for three
# 129 MiB arrays; without it the caches are the four 4 MiB L2s, and three
# 66 MiB arrays fit one 384 MiB node when a domain is checked alone.
QEMU_CPU_FLAGS=",l3-cache=off"
# The health check measures triad alone here: each domain has one vCPU, so
# every scope runs one emulated thread over 198 MiB, and copy doubled the
# guest's longest step (68 s of its 83). two-socket-smt checks the default
# kernels (copy and triad).

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run interleave membw run --size 256k --ntimes 3 --json --mem interleave:all
run bind3 membw run --size 256k --ntimes 3 --json --mem bind:3
run pernuma membw run --size 256k --ntimes 2 --json --strategy per-numa=1
run mscatter membw run --size 256k --ntimes 2 --json --pin M:scatter --threads 2
run latmatrix membw latency --numa-matrix --sizes 1MiB --time 20ms --format json
run health membw check --kernels triad --size 66MiB --ntimes 3 --tolerance 90% --budget 20s --format json
CMDS
}
