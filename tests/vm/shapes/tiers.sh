# (d) Two memory tiers: node 0 with the CPUs and node 1 with memory only,
# as a CXL expander shows up, with firmware tables (ACPI HMAT) that give
# each its bandwidth and latency; explicit 2 MiB and 1 GiB pages reserved
# on the kernel command line. Linux 6.12 (weighted interleave is 6.9+).
QEMU_KERNEL=new
QEMU_MACHINE="q35,hmat=on"
QEMU_SMP="2,sockets=1,cores=2,threads=1"
QEMU_NODES="0:0-1:3584M:0 1::1280M:0"
QEMU_TIMEOUT=600
QEMU_DIST="0,1,24"
QEMU_HMAT="hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=110
hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=200G
hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=270
hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=50G"
QEMU_APPEND="hugepagesz=1G hugepages=1 hugepagesz=2M hugepages=160"

guest_commands() {
cat <<'CMDS'
run topo membw topo --json
run toptext membw topo
run wi16 membw run --size 2097152 --ntimes 2 --json --hugepages never --mem weighted-interleave:0,1 --weights 0=3,1=1
run wi256 membw run --size 33554432 --ntimes 2 --json --hugepages never --mem weighted-interleave:0,1 --weights 0=3,1=1 --kernels copy
run wi16sys membw run --size 2097152 --ntimes 2 --json --hugepages never --mem weighted-interleave:0,1
run split16 membw run --size 2097152 --ntimes 2 --json --hugepages never --mem split:0=75%,1=25%
run split256 membw run --size 33554432 --ntimes 2 --json --mem split:0=75%,1=25% --kernels copy
run split16huge membw run --size 2097152 --ntimes 2 --json --mem split:0=75%,1=25% --hugepages 2M
run wi16huge membw run --size 2097152 --ntimes 2 --json --mem weighted-interleave:0,1 --weights 0=3,1=1 --hugepages 2M
run huge1g membw run --size 1M --ntimes 2 --json --hugepages 1G --kernels read --threads 1
run latpages membw latency --sizes 4MiB --hugepages never,thp,2M,1G --time 20ms --format json
run farshare membw sweep --far-share 0,10,20,30,40,50 --far-node 1 --size 1M --ntimes 3 --kernels copy,triad -o /tmp/far.jsonl
run farfile cat /tmp/far.jsonl
run nopages membw run --hugepages 2M --size 64M
run badsplit membw run --mem split:0=60%,1=30%
run badweights membw run --weights 5=1
run weights sh -c 'w=/sys/kernel/mm/mempolicy/weighted_interleave; echo before $(cat $w/node0) $(cat $w/node1); membw run --size 1M --ntimes 100000 --mem weighted-interleave:0,1 --weights 0=7,1=2 >/dev/null 2>/tmp/err & pid=$!; i=0; while [ "$(cat $w/node0)" != 7 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo during $(cat $w/node0) $(cat $w/node1); kill -TERM $pid; wait $pid; echo rc $?; echo after $(cat $w/node0) $(cat $w/node1)'
CMDS
}
# Node 0 reaches past 4 GiB (q35 keeps RAM below 2 GiB and resumes at
# 4 GiB), where the kernel finds the aligned free GiB a boot-time 1 GiB
# page needs.
