#!/bin/sh
# rxe-vm-init.sh - /init of the Soft-RoCE VM that ci/rxe-vm.sh boots: load
# rdma_rxe, create rxe0 on lo, run the project's verbs tests and the perftest
# comparison, the torture run over rxe, then two rails (rxe1 on dummy pc0, rxe2 on
# dummy pc1, each with its own address) for the two-rail tests (also under ASan)
# and the validation kit (ci/roce-validate.sh), whose results it prints between
# markers for the host to turn into a report; then the Python package over rxe0 in
# a chroot of the host's root (9p, read-only); reports RXE_VM_RESULT=PASS|FAIL and
# powers off. Kernel command line: pc_torture_reads=N (reads of the torture run),
# pc_rxe_steps=LIST, pc_python/pc_src/pc_build (step 8's interpreter and the host's
# source and build directories; no pc_python: step 8 is skipped).
export PATH=/pc:/bin:/sbin
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
echo "VM: kernel $(uname -r) up at $(cut -d' ' -f1 /proc/uptime)s"
FAILS=""
fail() { echo "VM: FAIL: $*"; FAILS="$FAILS $1"; }
finish() {
	if [ -z "$FAILS" ]; then echo "RXE_VM_RESULT=PASS"; else echo "RXE_VM_RESULT=FAIL$FAILS"; fi
	sync; poweroff -f
}
for m in $(cat /modules.list); do insmod "$m" || fail insmod "$m"; done
ip link set lo up
ulimit -l unlimited
rdma link add rxe0 type rxe netdev lo || { fail rdma-link-add; finish; }
i=0; while [ ! -e /sys/class/infiniband/rxe0/ports/1/state ] || ! grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state; do
	i=$((i + 1)); [ $i -gt 100 ] && { fail rxe0-not-active; finish; }; sleep 0.1; done
echo "VM: rxe0 $(cat /sys/class/infiniband/rxe0/ports/1/state) at $(cut -d' ' -f1 /proc/uptime)s"

# pc_rxe_steps=1,5,... runs only those steps (all by default)
STEPS=$(sed -n 's/.*pc_rxe_steps=\([0-9,]*\).*/\1/p' /proc/cmdline)
# CUnit's failed assertions of a test log (the tail above may not reach them).
failed_asserts() { grep -E '^ +[0-9]+\. /' "$1" | head -20; }

want() { [ -z "$STEPS" ] || echo ",$STEPS," | grep -q ",$1,"; }

if want 1; then
echo "VM: ---- 1. fabric conformance on rxe"
timeout 300 tcp_test rxe > /tmp/conform.log 2>&1; rc=$?
grep -vE '^\s*$' /tmp/conform.log | grep -vE 'CUnit|sourceforge' | tail -25
failed_asserts /tmp/conform.log
[ $rc = 0 ] || fail conformance

fi
if want 2; then
echo "VM: ---- 2. slotmap e2e over rxe"
timeout 300 e2e_test /pc/pcd rxe slotmap > /tmp/e2e.log 2>&1; rc=$?
grep -vE '^\s*$' /tmp/e2e.log | grep -vE 'CUnit|sourceforge' | tail -25
failed_asserts /tmp/e2e.log
[ $rc = 0 ] || fail e2e

echo "VM: ---- 2a. the same e2e suite in p2p mode over rxe"
timeout 300 e2e_test /pc/pcd rxe p2p > /tmp/e2e-p2p.log 2>&1; rc=$?
grep -E 'p2p|PASS|FAIL|passed|failed' /tmp/e2e-p2p.log | tail -12
[ $rc = 0 ] || fail e2e-p2p

echo "VM: ---- 2b. tiered pool e2e over rxe (the peer pulls from us, we READ its blocks)"
timeout 300 tier_e2e_test /pc/pcd rxe > /tmp/tier.log 2>&1; rc=$?
grep -vE '^\s*$' /tmp/tier.log | grep -vE 'CUnit|sourceforge|  \| ' | tail -12
[ $rc = 0 ] || fail tier-e2e

fi
if want 3; then
echo "VM: ---- 3. perftest next to pcbench on rxe0"
run_perf() {  # tool args...: server and client on the same rxe0
	t=$1; shift
	timeout 120 $t -d rxe0 -F "$@" > /tmp/$t.srv 2>&1 &
	srv=$!
	i=0; while ! netstat -ltn 2>/dev/null | grep -q ':18515 '; do i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.1; done
	cost_at
	timeout 120 $t -d rxe0 -F "$@" 127.0.0.1 > /tmp/$t.cli 2>&1 || {
		echo "VM: $t failed:"; tail -5 /tmp/$t.cli /tmp/$t.srv; fail perftest; }
	wait $srv	# not pcd's
	cost_to
	grep -E '^ *[0-9]+ +[0-9]+' /tmp/$t.cli | tail -2 | sed "s/^/VM: $t: /"
}
# perftest's average GB/s of its last run (the BW average column, MB/s)
perf_gbps() { grep -E '^ *[0-9]+ +[0-9]+' /tmp/$1.cli | tail -1 | awk '{printf "%.4f", $4 / 1000}'; }
# What a page costs: rdma_rxe does every packet's work in software, both ends' on
# this VM's CPUs, so CPU time and packets per page say where a gap to perftest
# comes from. snap: the VM's busy time (USER_HZ ticks of /proc/stat: 100 a second)
# and rxe0's packets sent (over lo each one is received too); cost: a short and a
# long run of one thing (perftest's -n, pcbench's --iters), of which the difference
# (no start-up, no connection set-up) over the pages between them is the cost.
HC=/sys/class/infiniband/rxe0/ports/1/hw_counters
snap() { echo "$(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat) $(cat $HC/sent_pkts 2>/dev/null || echo 0)"; }
cost_at() { COST0=$(snap); }
cost_to() { COST1=$(snap); }
cost() { # pages of the short run, pages of the long, and the snaps around each: "us packets" a page
	echo "$@" | awk '{ d = $2 - $1; printf "%.0f %.1f", (($9 - $7) - ($5 - $3)) * 1e4 / d, (($10 - $8) - ($6 - $4)) / d }'
}
run_cost() { # tool n-short n-long size: the tool's cost a message into PERF_COST, the long run's rows
	run_perf $1 -n $2 -s $4 > /dev/null; s0=$COST0 s1=$COST1
	run_perf $1 -n $3 -s $4
	PERF_COST=$(cost $2 $3 $s0 $s1 $COST0 $COST1)
}
# latency as one READ in flight at a time (ib_read_lat's cycle counter reads 0 MHz
# under TCG and prints inf, so its message rate is used); bandwidth below, READs and
# WRITEs of each page size right before each pcbench run of that size, whose get and
# set are given as ratios to them (the VM's speed drifts over a run)
run_perf ib_read_bw -n 2000 -s 12288 -t 1 -o 1
# room for every page of both sizes (no evictions: a get that misses moves nothing)
cat > /tmp/rxe.yaml <<YAML
name: rxe
store: {protocol: rxe, fallback: none, slot_size_classes: [16KiB, 64KiB], global_segment_size: 256MiB, timeout_ms: 5000}
nodes:
  - {name: n0, address: 127.0.0.1, port: 31998, rails: [{device: rxe0}]}
YAML
pcd --topology /tmp/rxe.yaml --node n0 2> /tmp/pcd.log &
pcd=$!
i=0; while ! grep -q "serving on" /tmp/pcd.log; do i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.1; done
pcb() { # page batch policy ops iters: one pcbench run, the snaps around it, its op's seconds in OP_S
	cost_at
	timeout 120 pcbench --topology /tmp/rxe.yaml --page-size $1 --batch $2 --keys 512 --iters $5 \
		--ops $4 --no-raw-tcp --prefix "p$1$2$3" --set store.slot_read_policy=$3 > /tmp/pcbench.log 2>&1 \
		|| { tail -5 /tmp/pcbench.log; fail pcbench; }
	cost_to
	OP_S=$(awk -v op=$4 '$1 == op && $3 > 0 { printf "%.6f", $2 / $3 }' /tmp/pcbench.log)
}
# Each op of pcbench runs alone, 2 and then 6 passes over its 512 keys (1024 and
# 3072 pages): its GB/s and cost are those of the 2048 pages between (a get process
# learns its keys' ways, the hints, in its first pass, as one that set them has).
for spec in "12KiB 64 auto 12288" "12KiB 64 predict 12288" "64KiB 64 auto 65536" "64KiB 64 predict 65536"; do
	set -- $spec
	run_cost ib_read_bw 2000 6000 $4; rc=$PERF_COST r=$(perf_gbps ib_read_bw)
	run_cost ib_write_bw 2000 6000 $4; wc=$PERF_COST w=$(perf_gbps ib_write_bw)
	echo "VM: pcbench over rxe: $1 pages, batch $2, read policy $3"
	for op in set get; do
		pcb $1 $2 $3 $op 2; a0=$COST0 a1=$COST1 s2=$OP_S
		[ $op = set ] && grep 'page checksums' /tmp/pcbench.log | sed 's/^/VM:   /'
		pcb $1 $2 $3 $op 6
		grep -E "^$op " /tmp/pcbench.log | sed 's/^/VM:   /'
		eval "${op}_gbps=$(echo "$s2 $OP_S $4" | awk '{ printf "%.4f", 2048 * $3 / ($2 - $1) / 1e9 }')"
		eval "${op}_cost=\"$(cost 1024 3072 $a0 $a1 $COST0 $COST1)\""
	done
	echo "$get_gbps $r $set_gbps $w" | awk '{ printf "VM:   get / ib_read_bw %.2f (%.4f / %s GB/s), set / ib_write_bw %.2f (%.4f / %s GB/s), passes 3 to 6\n", $1 / $2, $1, $2, $3 / $4, $3, $4 }'
	echo "$get_cost $rc $set_cost $wc" | awk '{ printf "VM:   a page: get %s us of CPU, %s packets (ib_read_bw %s us, %s), set %s us, %s packets (ib_write_bw %s us, %s)\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
done
echo "VM: pcbench over rxe: 12KiB pages, batch 1, read policy auto"
pcb 12KiB 1 auto set,get 2
grep -E '^(set|get|verify)' /tmp/pcbench.log | sed 's/^/VM:   /'
kill $pcd 2>/dev/null; wait $pcd

fi
if want 4; then
echo "VM: ---- 4. the demo over rxe: three node processes, slotmap then p2p"
cat > /tmp/demo.yaml <<YAML
name: demo-rxe
store: {protocol: rxe, fallback: none, slot_size_classes: [16KiB], global_segment_size: 16MiB, timeout_ms: 5000}
node_defaults: {address: 127.0.0.1, rails: [{device: rxe0}]}
nodes:
  - {name: n0, port: 32100}
  - {name: n1, port: 32101}
  - {name: n2, port: 32102}
YAML
timeout 120 pcdemo --topology /tmp/demo.yaml --pages 256 > /tmp/demo.log 2>&1 || fail demo
grep -v 'slot region ready' /tmp/demo.log | sed 's/^/VM:   /'
timeout 120 pcdemo --topology /tmp/demo.yaml --pages 256 --set store.mode=p2p > /tmp/demo-p2p.log 2>&1 \
	|| fail demo-p2p
grep -v 'pool ready' /tmp/demo-p2p.log | sed 's/^/VM:   /'

fi

READS=$(sed -n 's/.*pc_torture_reads=\([0-9]*\).*/\1/p' /proc/cmdline)
if want 5; then
echo "VM: ---- 5. torture over rxe: ${READS:-100000} reads, peers stopped and killed"
timeout 900 torture_test /pc/pcd "${READS:-100000}" chaos rxe > /tmp/torture.log 2>&1; rc=$?
grep -E 'torture over|passed|FAIL|Assertion|tests ' /tmp/torture.log | sed 's/^/VM:   /'
[ $rc = 0 ] || { tail -20 /tmp/torture.log; fail torture; }

fi
echo "VM: ---- 6. two rails: rxe1 on pc0 (10.11.0.1), rxe2 on pc1 (10.12.0.1)"
for i in 0 1; do
	ip link add pc$i type dummy && ip link set pc$i mtu 9000 && ip addr add 10.1$((i + 1)).0.1/24 dev pc$i \
		&& ip link set pc$i up && rdma link add rxe$((i + 1)) type rxe netdev pc$i || fail rails
done
for d in rxe1 rxe2; do
	i=0; while ! grep -qs ACTIVE /sys/class/infiniband/$d/ports/1/state; do
		i=$((i + 1)); [ $i -gt 100 ] && { fail $d-not-active; break; }; sleep 0.1; done
done
if want 6; then
timeout 300 verbs_test rxe rxe1 rxe2 pc1 > /tmp/verbs.log 2>&1; rc=$?
grep -vE '^\s*$' /tmp/verbs.log | grep -vE 'CUnit|sourceforge|^Suite|Run Summary|suites|asserts'
[ $rc = 0 ] || fail verbs-rails
echo "VM: ---- 6a. the same under AddressSanitizer: no verbs object leaked"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 timeout 300 verbs_leak_test rxe rxe1 rxe2 pc1 \
	> /tmp/verbs-leak.log 2>&1; rc=$?
grep -E 'verbs_test:|LeakSanitizer|SUMMARY|ERROR|FAILED|verbs_test.c:' /tmp/verbs-leak.log | sed 's/^/VM:   /'
[ $rc = 0 ] || { grep -A12 -E 'LeakSanitizer|ERROR' /tmp/verbs-leak.log | head -60; fail verbs-leaks; }
echo "VM: ---- 6b. among three rxe devices, a node and a client that name none take rxe0 (on lo, 127.0.0.1)"
cat > /tmp/one.yaml <<YAML
name: one
store: {protocol: rxe, fallback: none, slot_size_classes: [16KiB], global_segment_size: 16MiB, timeout_ms: 2000}
nodes:
  - {name: n0, address: 127.0.0.1, port: 31997}
YAML
pcd --topology /tmp/one.yaml --node n0 2> /tmp/pcd-one.log &
pcd=$!
i=0; while ! grep -q "serving on" /tmp/pcd-one.log; do i=$((i+1)); [ $i -gt 300 ] && break; sleep 0.1; done
if timeout 60 pcbench --topology /tmp/one.yaml --page-size 12KiB --batch 16 --keys 64 --iters 1 \
	--ops set,get --no-raw-tcp > /tmp/pcbench-one.log 2>&1; then
	grep -E '^(set|get|verify)|verbs: rail' /tmp/pcbench-one.log | sed 's/^/VM:   /'
	grep 'verbs: rail' /tmp/pcd-one.log | sed 's/^/VM:   /'
else
	tail -8 /tmp/pcbench-one.log /tmp/pcd-one.log; fail client-device
fi
kill $pcd 2>/dev/null; wait $pcd

fi
if want 7; then
echo "VM: ---- 7. the validation kit, against rxe1 and rxe2"
if PC_VALIDATE_BIN=/pc timeout 600 sh /pc/roce-validate.sh run --local --out /tmp/validate \
	--devices rxe1,rxe2 --server-address 10.11.0.1 --iters 2 > /tmp/validate.log 2>&1; then
	grep -E '^roce-validate' /tmp/validate.log | sed 's/^/VM:   /'
else
	tail -30 /tmp/validate.log; fail validate
fi
echo "PC_VALIDATE_BEGIN"
cat /tmp/validate/results.tsv 2>/dev/null
echo "PC_VALIDATE_END"
fi
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^$1=//p"; }
if want 8; then
echo "VM: ---- 8. the Python package (SGLang backend) over rxe0: the host pool without bounce copies"
PY=$(arg pc_python) SRC=$(arg pc_src) BLD=$(arg pc_build)
# The chroot's scratch (TMPDIR): a tmpfs over a host directory that holds neither
# the source nor the build, which CI clones under /tmp.
SCRATCH=""
for d in /tmp /var/tmp /mnt /srv /opt; do
	case "$SRC/" in "$d"/*) continue ;; esac
	case "$BLD/" in "$d"/*) continue ;; esac
	SCRATCH=$d
	break
done
if [ -z "$PY" ]; then
	echo "VM:   skipped: the host has no interpreter that imports torch (see the host's log)"
elif ! { mkdir -p /host && mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 \
		hostroot /host && mount --bind /proc /host/proc && mount --bind /sys /host/sys \
		&& mount --bind /dev /host/dev && [ -n "$SCRATCH" ] && [ -d "/host$SCRATCH" ] \
		&& mount -t tmpfs tmpfs "/host$SCRATCH"; }; then
	fail python-9p-mount
else
	echo "VM:   the host's root over 9p, read-only; scratch (TMPDIR) a tmpfs on $SCRATCH"
	timeout 600 chroot /host /usr/bin/env -i PATH=/usr/bin:/bin HOME="$SCRATCH" TMPDIR="$SCRATCH" \
		PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1 PEERCACHE_LIB="$BLD/libpeercache.so" \
		PEERCACHE_PCD="$BLD/tools/pcd" PEERCACHE_RDMA_DEVICE=rxe0 PEERCACHE_RDMA_PROTOCOL=rxe \
		sh -c "cd '$SRC/tests/python' && exec '$PY' -m unittest -v test_rdma" > /tmp/python.log 2>&1
	rc=$?
	grep -vE '^\s*$' /tmp/python.log | sed 's/^/VM:   /' | tail -40
	grep -q '^OK' /tmp/python.log && ! grep -q 'skipped' /tmp/python.log || rc=1
	[ $rc = 0 ] || fail python-rdma
fi
fi
finish
