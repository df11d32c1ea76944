# (c) two CPU nodes and a third node with memory but no CPUs, as HBM or CXL
# memory shows up; with a simulated GPU whose memory it is (a GH200's HBM
# node), a superchip's baseline and check.
QEMU_SMP="2,sockets=2,cores=1,threads=1"
QEMU_NODES="0:0:256M 1:1:256M 2::256M"
QEMU_DIST="0,1,20 0,2,30 1,2,30"

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run bind2 membw run --size 256k --ntimes 3 --json --mem bind:2
run preferred2 membw run --size 256k --ntimes 3 --json --mem preferred:2
run cpunode2 membw run --size 256k --cpunode 2
run latmatrix membw latency --numa-matrix --sizes 1MiB --time 20ms --format json
run superbase env MEMBW_SIM_DEVICE=devices=1,c2c=10,memory-node=0:2 membw baseline --small --size 64k --rounds 2 --allow-busy -o /tmp/super.json --json
run supercheck env MEMBW_SIM_DEVICE=devices=1,c2c=10,c2c-down=0:2,memory-node=0:2 membw check --baseline /tmp/super.json --format json
CMDS
}
