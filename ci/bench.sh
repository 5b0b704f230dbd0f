#!/bin/sh
# bench.sh - the slotmap-over-tcp benchmark of the README: pcbench against a 1-node
# cluster on loopback at 12 KiB, 64 KiB and 256 KiB pages (64-page batches), next to
# a raw TCP stream, Redis 7 (pipelined MSET/MGET) and memcached 1.6 (multi-get,
# -I 1m), all started and stopped here. pcd is pinned to CPU 1, pcbench to CPU 0.
# Then the disk tier (pctierbench) against raw sequential I/O of the same disk, and
# slotmap against p2p on the same workloads (pcbench --mode both, laptop.yaml's ports),
# and the simulator's hit-rate mode against a bare model of its cache (pcsimbench).
# Timing is noisy on a shared machine: read the ratios, measured in one run.
set -eu
cd "$(dirname "$0")/.."
./ci/install-deps.sh
if ! command -v redis-server >/dev/null || ! command -v memcached >/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "bench.sh: needs redis-server and memcached; run as root to install them" >&2; exit 1; }
	apt-get install -y -qq --no-install-recommends redis-server memcached >/dev/null
fi
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

TMP=$(mktemp -d /tmp/pcbench.XXXXXX)
BASE=$(( 20000 + $$ % 20000 ))
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

cat > "$TMP/topo.yaml" <<YAML
name: bench
store: {slot_size_classes: [16KiB, 64KiB, 256KiB], global_segment_size: 1536MiB}
nodes:
  - {name: n0, address: 127.0.0.1, port: $BASE}
YAML
taskset -c 1 ./build/tools/pcd --topology "$TMP/topo.yaml" --node n0 2>"$TMP/pcd.log" &
PIDS="$PIDS $!"
taskset -c 1 redis-server --port $((BASE + 1)) --bind 127.0.0.1 --save "" --appendonly no \
	--protected-mode no --daemonize no >"$TMP/redis.log" 2>&1 &
PIDS="$PIDS $!"
taskset -c 1 memcached -p $((BASE + 2)) -l 127.0.0.1 -U 0 -m 2048 -I 1m -t 1 -u root \
	>"$TMP/memcached.log" 2>&1 &
PIDS="$PIDS $!"
i=0
until grep -q "serving on" "$TMP/pcd.log"; do i=$((i + 1)); [ $i -gt 300 ] && { cat "$TMP/pcd.log"; exit 1; }; sleep 0.1; done
sleep 0.5

for page in 12KiB 64KiB 256KiB; do
	keys=$(( 1024 * 12 / ${page%KiB} ))
	[ $keys -lt 256 ] && keys=256
	echo "=== ${page} pages, ${keys} keys, batch 64"
	./build/tools/pcbench --topology "$TMP/topo.yaml" --page-size "$page" --keys "$keys" \
		--batch 64 --iters 20 --cpu 0 --server-cpu 1 --prefix "b$page" \
		--redis $((BASE + 1)) --memcached $((BASE + 2))
done

# The disk tier against the disk under it, in the same run (ratios to raw sequential
# I/O of the same directory; see tools/pctierbench.c).
echo "=== disk tier: 12 KiB blocks (Qwen2.5-0.5B pages), then 2 MiB (Llama-3.1-8B pages)"
./build/tools/pctierbench --dir "${PC_BENCH_DISK_DIR:-/var/tmp}"
./build/tools/pctierbench --dir "${PC_BENCH_DISK_DIR:-/var/tmp}" --block 2MiB --blocks 512 --batch 16 --rounds 2

# The two modes on the same workloads, each on a 3-node cluster of its own.
echo "=== slotmap vs p2p: 12 KiB pages, then 256 KiB"
./build/tools/pcbench --mode both --topology topologies/laptop.yaml --page-size 12KiB --iters 5
./build/tools/pcbench --mode both --topology topologies/laptop.yaml --page-size 256KiB --iters 10 \
	--set store.global_segment_size=384MiB

# The simulator's hit-rate mode against a bare model of the same cache (every page
# must decide alike), on the README's shared-prefix workload and on Zipf.
echo "=== simulator, hit-rate mode: the store against a bare set-associative model"
taskset -c 1 ./build/sim/pcsimbench --runs 5
taskset -c 1 ./build/sim/pcsimbench --runs 5 --workload "zipf:keys=200000,s=1.0,pages=32,requests=200000" \
	--set store.global_segment_size=2GiB
