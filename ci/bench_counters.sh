#!/bin/sh
# bench_counters.sh [BASE_REV [ROUNDS]] - what counting costs on the batch paths:
# pcbench set/get/exists against a 1-node pcd on loopback (12 KiB pages, 64-page
# batches, pcd on CPU 1, pcbench on CPU 0, as ci/bench.sh), this tree against
# BASE_REV (default: the commit before the counters, HEAD's merge base with main),
# runs alternated ROUNDS times (default 7). Prints each run, then per op the median
# pages/s and median p50 per batch of each build and their ratios (this / base).
# The endpoint is off in both; counters cannot be switched off, so the base build is
# the build without them. Timing is noisy on a shared machine: read the medians.
set -eu
cd "$(dirname "$0")/.."
BASE=${1:-$(git merge-base HEAD main)}
ROUNDS=${2:-7}
JOBS=$(nproc 2>/dev/null || echo 2)
TMP=$(mktemp -d /tmp/pcbench-counters.XXXXXX)
PID=""
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

cmake -S . -B build >/dev/null
cmake --build build -j "$JOBS" --target pcd pcbench >/dev/null
mkdir "$TMP/base"
git archive "$BASE" | tar -x -C "$TMP/base"
cmake -S "$TMP/base" -B "$TMP/base/build" -DPC_BUILD_TESTS=OFF >/dev/null
cmake --build "$TMP/base/build" -j "$JOBS" --target pcd pcbench >/dev/null

PORT=$(( 20000 + $$ % 20000 ))
cat > "$TMP/topo.yaml" <<YAML
name: counters
store: {slot_size_classes: [16KiB], global_segment_size: 256MiB}
nodes:
  - {name: n0, address: 127.0.0.1, port: $PORT}
YAML
echo "bench_counters: this tree ($(git rev-parse --short HEAD)) against $(git rev-parse --short "$BASE"), $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
	for b in base this; do
		if [ $b = base ]; then D=$TMP/base/build/tools; else D=build/tools; fi
		taskset -c 1 "$D/pcd" --topology "$TMP/topo.yaml" --node n0 2>"$TMP/pcd.log" &
		PID=$!
		until grep -q "serving on" "$TMP/pcd.log"; do sleep 0.05; done
		"$D/pcbench" --topology "$TMP/topo.yaml" --page-size 12KiB --keys 2048 --batch 64 \
			--iters 10 --cpu 0 --server-cpu 1 --no-raw-tcp --no-verify --prefix "r$r" 2>/dev/null |
			awk -v b=$b -v r="$r" '$1 == "set" || $1 == "get" || $1 == "exists" { print r, b, $1, $3, $5 }'
		kill "$PID"
		wait "$PID" 2>/dev/null || true
		PID=""
	done
done | tee "$TMP/runs"
python3 - "$TMP/runs" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
for op in ("set", "get", "exists"):
    m = {}
    for b in ("base", "this"):
        rate = [float(x[3]) for x in runs if x[1] == b and x[2] == op]
        p50 = [float(x[4]) for x in runs if x[1] == b and x[2] == op]
        m[b] = (statistics.median(rate), statistics.median(p50))
    print("bench_counters: %-6s pages/s median base %9.0f this %9.0f (%.3f); p50 us base %7.1f this %7.1f (%.3f)" % (
        op, m["base"][0], m["this"][0], m["this"][0] / m["base"][0],
        m["base"][1], m["this"][1], m["this"][1] / m["base"][1]))
PY
