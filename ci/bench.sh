#!/bin/sh
# bench.sh - every performance comparison of peercache, in one run, and the page
# that reports them: docs/performance.md and docs/performance-get.png (written
# here, never by hand).
#
# Slotmap over tcp against its peers: per page size (12, 64, 256 KiB; 64-page
# batches; a 256 MiB working set, then 80 % slot occupancy), pcd, memcached 1.6
# (-I 1m) and redis-server 7, started here on free loopback ports and pinned to CPU
# 1, and pcbench on CPU 0, which measures in one run the store's set/get/exists,
# the ceiling (the fastest of raw TCP transfers between the same cores: streams,
# and batch by batch as a get moves them) and every memcached and Redis client of
# tools/pcbench/bench_ref*.c, the best of each peer per op counting. Every party
# runs one congestion control, PC_BENCH_CC (cubic, Debian's default, which does not
# pace: docs/deployment.md; empty: the system's): the store from its topology,
# memcached and redis-server through build/tools/libpc_bench_cc.so preloaded
# (tools/pcbench/bench_cc_preload.c), the ceiling's tuned transfers on their own;
# each listener is checked with ss.
# Each size runs PC_BENCH_ROUNDS times (3) at each occupancy; the page gives each
# ratio's range over the rounds, each ratio taken within one run, in which the
# store and every client take PC_BENCH_TRIES interleaved tries (3) and each keeps
# its best (pcbench --tries).
# Then the disk tier (pctierbench, against raw sequential I/O of the same
# directory), verbs over Soft-RoCE in the VM against perftest (ci/rxe-vm.sh, step
# 3), the store with store.tcp_congestion: cubic against the system's congestion
# control, slotmap against p2p (pcbench --mode both), and the simulator's hit-rate mode
# against a bare model of its cache (pcsimbench), as they print.
#
#   ci/bench.sh              the whole run (about 35 minutes on 2 cores)
#   PC_BENCH_ROUNDS=1 PC_BENCH_SIZES=256KiB PC_BENCH_ONLY=tcp ci/bench.sh
#
# Not part of CTest (too slow and too noisy for a pass/fail test); the reference
# clients' code is (unit.bench_ref). Timing is noisy on a shared machine: read
# the ratios.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# what the page names: the tree and the time the measurements start from
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)
ROUNDS=${PC_BENCH_ROUNDS:-3}
TRIES=${PC_BENCH_TRIES:-3}
SIZES=${PC_BENCH_SIZES:-"12KiB 64KiB 256KiB"}
ONLY=${PC_BENCH_ONLY:-all}
BENCH_CC=${PC_BENCH_CC-cubic}
OUT=${PC_BENCH_OUT:-$ROOT/docs}

./ci/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j 2 >/dev/null

mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/pcbench.XXXXXX)
PIDS=""
stop_servers() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	PIDS=""
}
cleanup() {
	stop_servers
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# A loopback port nothing listens on now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until something accepts connections on port $1 (at most 30 s).
wait_port() {
	python3 - "$1" <<'PY'
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("bench.sh: nothing answers on port %s" % sys.argv[1])
PY
}

# bytes of a size such as 12KiB
bytes_of() { echo $(( ${1%KiB} * 1024 )); }

# Slots of one class of page $1 bytes in a segment of $2 MiB (64-byte header,
# rounded up to 64 bytes, as core/placement/slot.c lays them out).
slots_of() { echo $(( $2 * 1024 * 1024 / (($1 + 64 + 63) / 64 * 64) )); }

# The listener on port $1 ($2, its log $3) runs $BENCH_CC, or the bench stops.
check_cc() {
	[ -n "$BENCH_CC" ] || return 0
	ss -Hltni "sport = :$1" | grep -qw -- "$BENCH_CC" && return 0
	cat "$3"
	echo "bench.sh: $2 on port $1 does not run $BENCH_CC congestion control (ss: $(ss -Hltni "sport = :$1" | tail -1 | tr -s '\t ' ' ')); its log is above" >&2
	exit 1
}

# A one-node topology in $1: pages of one size class $2, a segment of $3 MiB, port
# $4, congestion control $5 ("" the system's).
write_topo() {
	printf 'name: bench\nstore: {slot_size_classes: [%s], global_segment_size: %sMiB, tcp_congestion: "%s"}\nnodes:\n  - {name: n0, address: 127.0.0.1, port: %s}\n' \
		"$2" "$3" "$5" "$4" >"$1"
}

# A peer (memcached, redis-server) on CPU 1 with the bench's congestion control,
# in place of the subshell that runs it in the background (its $! is the peer's).
peer() {
	exec taskset -c 1 env LD_PRELOAD="$ROOT/build/tools/libpc_bench_cc.so" PC_BENCH_CC="$BENCH_CC" "$@"
}

# Start pcd (one node, one size class: the page), memcached and redis-server, all
# on CPU 1 and on free ports; sets PCD_TOPO, RPORT, MPORT.
start_servers() {
	page=$1 seg=$2
	port=$(free_port)
	PCD_TOPO=$TMP/topo-$page.yaml
	write_topo "$PCD_TOPO" "$page" "$seg" "$port" "$BENCH_CC"
	taskset -c 1 ./build/tools/pcd --topology "$PCD_TOPO" --node n0 2>"$TMP/pcd.log" &
	PIDS="$PIDS $!"
	RPORT=$(free_port)
	peer redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no \
		--protected-mode no --daemonize no >"$TMP/redis.log" 2>&1 &
	PIDS="$PIDS $!"
	MPORT=$(free_port)
	peer memcached -p "$MPORT" -l 127.0.0.1 -U 0 -m 4096 -I 1m -t 1 -u root \
		>"$TMP/memcached.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_port "$port"
	wait_port "$RPORT"
	wait_port "$MPORT"
	check_cc "$port" pcd "$TMP/pcd.log"
	check_cc "$RPORT" redis-server "$TMP/redis.log"
	check_cc "$MPORT" memcached "$TMP/memcached.log"
}

# One pcbench run against the servers; its summary line goes to results.txt with
# the run's label in front.
bench_run() {
	label=$1 page=$2 keys=$3 prefix=$4
	log=$TMP/run-$prefix.log
	./build/tools/pcbench --topology "$PCD_TOPO" --page-size "$page" --keys "$keys" \
		--batch 64 --iters 3 --tries "$TRIES" --cpu 0 --server-cpu 1 --prefix "$prefix" \
		--redis "$RPORT" --memcached "$MPORT" >"$log" 2>&1 || {
		cat "$log"
		echo "bench.sh: pcbench failed ($label, $page); its output is above" >&2
		exit 1
	}
	cat "$log"
	grep -q "reference check: FAIL" "$log" && echo "bench.sh: a reference client lost to the naive one ($label, $page)" >&2
	echo "$label $(grep '^summary ' "$log")" >>"$TMP/results.txt"
}

# One pcbench run of set then get on a fresh pcd whose connections, and pcbench's,
# use congestion control $2 ("" the system's); prints "GB/s get, p50 get, GB/s set".
cc_run() {
	page=$1 cc=$2
	port=$(free_port)
	topo=$TMP/cc-$page.yaml
	write_topo "$topo" "$page" 512 "$port" "$cc"
	taskset -c 1 ./build/tools/pcd --topology "$topo" --node n0 2>"$TMP/pcd-cc.log" &
	pid=$!
	wait_port "$port"
	./build/tools/pcbench --topology "$topo" --page-size "$page" \
		--keys $(( 256 * 1024 * 1024 / $(bytes_of "$page") )) --batch 64 --iters 3 --cpu 0 \
		--ops set,get --no-raw-tcp --prefix "cc$cc" >"$TMP/cc.log" 2>&1 || {
		cat "$TMP/cc.log"
		kill "$pid"
		echo "bench.sh: pcbench failed (congestion control '$cc', $page)" >&2
		exit 1
	}
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	sed -n 's/^summary .* get_gbps=\([0-9.]*\) get_p50_us=\([0-9.]*\) set_gbps=\([0-9.]*\) .*/\1 \2 \3/p' "$TMP/cc.log"
}

# Two rounds of the system's congestion control and cubic, alternated, at page $1.
cc_pair() {
	page=$1
	for r in 1 2; do
		set -- $(cc_run "$page" "") $(cc_run "$page" cubic)
		echo "$page round $r: $sys_cc get $1 GB/s p50 $2 us set $3 GB/s; cubic get $4 GB/s p50 $5 us set $6 GB/s"
		echo "$@" | awk -v cc="$sys_cc" '{ printf "  cubic / %s: get %.2f, p50 %.2f, set %.2f\n", cc, $4 / $1, $5 / $2, $6 / $3 }'
	done
}

: >"$TMP/results.txt"
: >"$TMP/other.txt"
if [ "$ONLY" = all ] || [ "$ONLY" = tcp ]; then
	for page in $SIZES; do
		b=$(bytes_of "$page")
		seg=512			# 256 MiB of pages fill half the slots
		ws_keys=$(( 256 * 1024 * 1024 / b ))
		occ_keys=$(( $(slots_of "$b" "$seg") * 8 / 10 ))
		start_servers "$page" "$seg"
		# Each run writes keys of its own, the newest in their buckets: a full
		# bucket evicts the earlier runs' first (slot_pick_way, in write order),
		# so a run's hit rate is that of its own keys at its own occupancy.
		r=1
		while [ "$r" -le "$ROUNDS" ]; do
			echo "=== $page pages, $ws_keys keys (256 MiB), batch 64, round $r"
			bench_run ws "$page" "$ws_keys" "w$r-$page"
			echo "=== $page pages, $occ_keys keys (80 % of the slots), batch 64, round $r"
			bench_run occ80 "$page" "$occ_keys" "o$r-$page"
			r=$((r + 1))
		done
		stop_servers
	done
fi

if [ "$ONLY" = all ]; then
	# The disk tier against the disk under it, in the same run (ratios to raw
	# sequential I/O of the same directory; see tools/pctierbench.c).
	{
		echo "### disk tier: 12 KiB blocks (Qwen2.5-0.5B pages)"
		echo '```'
		./build/tools/pctierbench --dir "${PC_BENCH_DISK_DIR:-/var/tmp}"
		echo '```'
		echo "### disk tier: 2 MiB blocks (Llama-3.1-8B pages)"
		echo '```'
		./build/tools/pctierbench --dir "${PC_BENCH_DISK_DIR:-/var/tmp}" --block 2MiB --blocks 512 --batch 16 --rounds 4
		echo '```'
		# Verbs over Soft-RoCE in the QEMU VM (ci/rxe-vm.sh, step 3): pcbench's get
		# and set against ib_read_bw and ib_write_bw of the same page size, run
		# right before it in the same VM.
		echo "### verbs over Soft-RoCE (rxe in a QEMU TCG VM), against perftest"
		echo '```'
		if PC_RXE_STEPS=3 ./ci/rxe-vm.sh build >"$TMP/rxe.log" 2>&1; then
			grep -E '^VM: (ib_|pcbench)|^VM:   ' "$TMP/rxe.log" | sed 's/^VM: *//'
		else
			echo "the rxe VM did not run: $(tail -1 "$TMP/rxe.log")"
		fi
		echo '```'
		# The store with the congestion control docs/deployment.md advises for its
		# connections (cubic, which does not pace) against the system's, alternated.
		sys_cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
		echo "### the store with store.tcp_congestion: cubic, against the system's ($sys_cc)"
		echo "Each line one pcbench run (set, then get; a fresh pcd on CPU 1, pcbench on CPU 0,"
		echo "a 256 MiB working set), the two alternated; the ratios are cubic's over the"
		echo "system's run before it."
		echo '```'
		for page in $SIZES; do
			cc_pair "$page"
		done
		echo '```'
		# The two modes on the same workloads, each on a 3-node cluster of its own.
		echo "### slotmap against p2p, 12 KiB pages"
		echo '```'
		./build/tools/pcbench --mode both --free-ports --topology topologies/laptop.yaml --page-size 12KiB --iters 5
		echo '```'
		echo "### slotmap against p2p, 256 KiB pages"
		echo '```'
		./build/tools/pcbench --mode both --free-ports --topology topologies/laptop.yaml --page-size 256KiB --iters 10 \
			--set store.global_segment_size=384MiB
		echo '```'
		# The simulator: hit-rate mode against a bare model of the same cache, then
		# a million requests in timing mode on rack.yaml and ten million in hit-rate
		# mode on large.yaml (512 nodes), with pcsim's summary lines.
		echo "### simulator"
		echo "Hit-rate mode against a bare set-associative model of the same cache (pcsimbench);"
		echo "a million requests in timing mode on rack.yaml; ten million in hit-rate mode on"
		echo "large.yaml (512 nodes), with the peak memory."
		echo '```'
		taskset -c 1 ./build/sim/pcsimbench --runs 5
		taskset -c 1 ./build/sim/pcsimbench --runs 5 --workload "zipf:keys=200000,s=1.0,pages=32,requests=200000" \
			--set store.global_segment_size=2GiB
		sim_wl="prefix:groups=2000,prompts=20,prefix=32,suffix=4,group_s=0.8"
		taskset -c 1 ./build/sim/pcsim --topology topologies/rack.yaml --out "$TMP/sim-rack" \
			--workload "$sim_wl,requests=1000000,rate=5000" 2>&1 | grep -E "simulated in|peak memory"
		taskset -c 1 ./build/sim/pcsim --topology topologies/large.yaml --mode hitrate --out "$TMP/sim-large" \
			--workload "$sim_wl,requests=10000000,rate=20000" 2>&1 | grep -E "simulated in|peak memory"
		echo '```'
	} 2>&1 | tee "$TMP/other.txt"
fi

python3 ci/bench_report.py --results "$TMP/results.txt" --other "$TMP/other.txt" \
	--rounds "$ROUNDS" --tries "$TRIES" --cc "$BENCH_CC" --out "$OUT" --commit "$COMMIT" --started "$STARTED"
echo "bench.sh: wrote $OUT/performance.md and $OUT/performance-get.png"
