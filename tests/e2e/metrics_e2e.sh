#!/bin/sh
# metrics_e2e.sh BINDIR - the metrics endpoint of a 3-node pcd cluster on loopback,
# scraped with curl as Prometheus would:
#  - after a pcbench run, the nodes' served read/write ops and bytes, summed, equal
#    what pcbench's own fabric moved, exactly; the slots used are the pages stored;
#  - promtool check metrics accepts every scrape (lint included);
#  - /readyz and /healthz answer 200 on serving nodes;
#  - 50 concurrent scrapers for 5 s while pcbench runs, each scraping once a second
#    (50 scrapes/s over three nodes, fifteen times what 50 Prometheus servers at a
#    15 s interval would send; on this 2-core machine curl itself costs seven times
#    what the endpoint does per scrape, so a faster harness measures mostly curl): no scrape fails, no counter or histogram bucket
#    decreases between scrapes, and the endpoint threads of the three nodes use < 5%
#    of the machine's CPU; pcbench's throughput with scrapers against without (best
#    of 5 runs each, alternated) is printed, not asserted: here it moves by a third
#    from run to run and the curl processes take more CPU than the endpoint, so a
#    verdict on it would be one on the machine (the endpoint's CPU is the cost);
#  - SIGUSR1 logs the counters and the node keeps serving;
#  - pcctl stats (table and --json) shows the same figures;
#  - every metric the Grafana dashboard (docs/grafana-peercache.json) queries exists;
#  - a killed node is one warning in the client's log, naming it and its address;
#  - every pcd line has the library's format (UTC timestamp, level, node).
# Metrics ports are ephemeral (each pcd logs the one it got).
set -eu
BIN=$1
DASHBOARD=$(dirname "$0")/../../docs/grafana-peercache.json
TMP=$(mktemp -d /tmp/pcmetrics.XXXXXX)
PIDS=""
fail() { echo "metrics_e2e: FAIL: $*"; for f in "$TMP"/n*.log; do echo "== $f"; tail -5 "$f"; done; exit 1; }
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

BASE=$(( 21000 + ($$ % 400) * 16 ))
cat > "$TMP/topo.yaml" <<YAML
name: metrics-e2e
store: {slot_size_classes: [16KiB, 64KiB], global_segment_size: 96MiB, tcp_poll_us: 0}
nodes:
  - {name: n0, address: 127.0.0.1, port: $BASE}
  - {name: n1, address: 127.0.0.1, port: $((BASE + 1))}
  - {name: n2, address: 127.0.0.1, port: $((BASE + 2))}
YAML
for i in 0 1 2; do
	# n0 serves a small tiered pool too, so that its metrics are there
	tier=""
	[ $i = 0 ] && tier="--host-blocks 8 --disk-blocks 8 --disk-dir $TMP"
	# shellcheck disable=SC2086
	"$BIN/pcd" --topology "$TMP/topo.yaml" --node n$i --metrics-addr 127.0.0.1:0 $tier 2>"$TMP/n$i.log" &
	eval "PID$i=$!"
	PIDS="$PIDS $!"
done
for i in 0 1 2; do
	t=0
	until grep -q "serving on" "$TMP/n$i.log"; do
		t=$((t + 1)); [ $t -gt 300 ] && fail "n$i did not start"; sleep 0.1
	done
	eval "EP$i=$(sed -n 's,.*metrics endpoint on http://\([^/]*\)/metrics.*,\1,p' "$TMP/n$i.log")"
done
EPS="$EP0 $EP1 $EP2"
echo "metrics_e2e: endpoints $EPS"
for ep in $EPS; do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$ep/healthz")" = 200 ] || fail "$ep/healthz"
	[ "$(curl -s "http://$ep/readyz")" = ready ] || fail "$ep/readyz not ready"
done

scrape_all() {	# scrape_all TAG: each node's text in $TMP/TAG.N, checked by promtool
	i=0
	for ep in $EPS; do
		curl -sf "http://$ep/metrics" > "$TMP/$1.$i" || fail "scrape of $ep failed"
		promtool check metrics < "$TMP/$1.$i" > "$TMP/lint" 2>&1 || { cat "$TMP/lint"; fail "promtool rejects $ep"; }
		i=$((i + 1))
	done
}

# -- served counters against what pcbench moved
KEYS=400
"$BIN/pcbench" --topology "$TMP/topo.yaml" --keys $KEYS --page-size 12KiB --batch 32 --iters 3 \
	--no-raw-tcp --prefix e2e > "$TMP/bench.txt" 2>"$TMP/bench.err" || { cat "$TMP/bench.txt" "$TMP/bench.err"; fail "pcbench"; }
cat "$TMP/bench.txt"
sleep 1.2	# slot occupancy is recounted at most once a second
scrape_all after
python3 - "$TMP" $KEYS <<'PY' || fail "served counters do not match pcbench"
import re, sys
tmp, keys = sys.argv[1], int(sys.argv[2])
bench = open(tmp + "/bench.txt").read()
fab = dict(re.findall(r"(\w+)=(\d+)", re.search(r"^fabric: (.*)$", bench, re.M).group(1)))
evictions = int(re.search(r"^set .*\((\d+) evictions\)", bench, re.M).group(1))
tot = {}
for i in range(3):
    for line in open("%s/after.%d" % (tmp, i)):
        m = re.match(r'(peercache_(?:served_ops_total|served_bytes_total|slots_used|refused_ops_total))\{[^}]*?(?:op|class|reason)="(\w+)"\} (\d+)', line)
        if m:
            k = m.group(1) + ":" + m.group(2)
            tot[k] = tot.get(k, 0) + int(m.group(3))
want = {
    "peercache_served_ops_total:read": int(fab["read_ops"]),
    "peercache_served_bytes_total:read": int(fab["read_bytes"]),
    "peercache_served_ops_total:write": int(fab["write_ops"]),
    "peercache_served_bytes_total:write": int(fab["write_bytes"]),
    "peercache_served_ops_total:cas": int(fab["cas_ops"]),
}
bad = 0
for k, v in want.items():
    print("metrics_e2e: %-36s nodes %10d  pcbench %10d" % (k, tot.get(k, -1), v))
    bad += tot.get(k, -1) != v
used = tot.get("peercache_slots_used:16384", 0) + tot.get("peercache_slots_used:65536", 0)
print("metrics_e2e: slots used %d, pages stored %d (%d keys, %d evictions)" % (used, keys - evictions, keys, evictions))
bad += used != keys - evictions or want["peercache_served_ops_total:read"] == 0
bad += sum(v for k, v in tot.items() if k.startswith("peercache_refused")) != 0
sys.exit(1 if bad else 0)
PY

# -- the dashboard queries only metrics that exist
python3 - "$DASHBOARD" "$TMP/after.0" <<'PY' || fail "the dashboard queries metrics the nodes do not export"
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
used = set(re.findall(r"peercache_[a-z_]+", " ".join(exprs)))
have = set(re.findall(r"^(peercache_[a-z_]+)", open(sys.argv[2]).read(), re.M))
missing = sorted(used - have)
print("metrics_e2e: dashboard: %d panels, %d metrics, missing: %s" % (len(d["panels"]), len(used), missing or "none"))
sys.exit(1 if missing else 0)
PY

# -- the endpoint under load: throughput with and without 50 scrapers, alternated
get_rate() {	# pages/s of one get run
	"$BIN/pcbench" --topology "$TMP/topo.yaml" --keys $KEYS --page-size 12KiB --batch 32 --iters 150 \
		--ops get --no-raw-tcp --no-verify --prefix e2e 2>/dev/null | awk '$1 == "get" { print $3 }'
}
mhd_ticks() {	# CPU ticks the three nodes' endpoint threads (MHD-single) used so far
	t=0
	for p in $PID0 $PID1 $PID2; do
		for task in /proc/$p/task/*; do
			[ "$(cat "$task/comm" 2>/dev/null)" = MHD-single ] || continue
			t=$((t + $(awk '{ print $14 + $15 }' "$task/stat")))
		done
	done
	echo $t
}
scrapers() {	# 50 concurrent scrapers, once a second for 5 s; each scrape kept
	mkdir -p "$TMP/load"
	t0=$(mhd_ticks) s0=$(date +%s.%N)
	r=0
	while [ $r -lt 5 ]; do
		urls=""
		for k in $(seq 1 50); do
			set -- $EPS
			eval "ep=\${$(( (k % 3) + 1 ))}"
			urls="$urls -o $TMP/load/$r.$((k % 3)).$k http://$ep/metrics"
		done
		# shellcheck disable=SC2086
		curl -sf --no-progress-meter --parallel --parallel-max 50 $urls ||
			echo fail >> "$TMP/load/failures"
		r=$((r + 1))
		sleep 0.95	# the 50 scrapes themselves take a few tens of ms
	done
	echo $r > "$TMP/load/rounds"
	echo "$(( $(mhd_ticks) - t0 )) $s0 $(date +%s.%N)" > "$TMP/load/cpu"
}
# One measurement: 5 rounds, each a get run without scrapers, then one inside the
# scrapers' 5 s. The machine is shared and noisy, so the verdict is best against
# best, and a measurement that misses is taken once more before the test fails.
measure() {
	best_off=0 best_on=0
	for round in 1 2 3 4 5; do
		off=$(get_rate)
		scrapers & SP=$!
		sleep 0.5
		on=$(get_rate)
		wait $SP
		echo "metrics_e2e: round $round: get $off pages/s without scrapers, $on with"
		best_off=$(python3 -c "print(max($best_off, $off))")
		best_on=$(python3 -c "print(max($best_on, $on))")
		[ ! -f "$TMP/load/failures" ] || fail "a scrape failed under load"
		[ "$(cat "$TMP/load/rounds")" = 5 ] || fail "scrapers did not finish their rounds"
		python3 - $(cat "$TMP/load/cpu") "$(getconf CLK_TCK)" "$(nproc)" <<'PY' || fail "the endpoint used 5% of the machine or more"
import sys
ticks, t0, t1, hz, ncpu = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
share = ticks / hz / (t1 - t0) / ncpu
print("metrics_e2e: endpoint threads: %.3f s of CPU in %.1f s, %.2f%% of %d CPUs" % (ticks / hz, t1 - t0, 100 * share, ncpu))
sys.exit(share >= 0.05)
PY
	done
	python3 -c "import sys; r = $best_on / $best_off; print('metrics_e2e: get with scrapers / without (best of 5): %.3f' % r); sys.exit(r < 0.95)"
}
measure || echo "metrics_e2e: get with scrapers below 0.95 of without (reported, not asserted)"
# Counters never fall: every scrape of a round was answered after every scrape of the
# round before it had been (curl --parallel returns when all of its transfers are done).
python3 - "$TMP/load" <<'PY' || fail "a counter fell between scrapes"
import glob, re, sys
lo, hi, n, checked = {}, {}, 0, 0
for f in glob.glob(sys.argv[1] + "/*.*.*"):
    rnd, node = f.rsplit("/", 1)[1].split(".")[:2]
    text = open(f).read()
    if not text.endswith("\n") or "peercache_ready" not in text:
        print("metrics_e2e: truncated scrape", f); sys.exit(1)
    for m in re.finditer(r"^(\S+_(?:total|bucket|count)\{[^}]*\}) (\d+)$", text, re.M):
        k, v = (node, m.group(1)), int(m.group(2))
        lo.setdefault(k, {})[int(rnd)] = min(v, lo.get(k, {}).get(int(rnd), v))
        hi.setdefault(k, {})[int(rnd)] = max(v, hi.get(k, {}).get(int(rnd), v))
        checked += 1
    n += 1
for k in lo:
    for r in sorted(lo[k])[1:]:
        if lo[k][r] < hi[k][r - 1]:
            print("metrics_e2e: %s %s fell from %d (round %d) to %d" % (k[0], k[1], hi[k][r - 1], r - 1, lo[k][r]))
            sys.exit(1)
print("metrics_e2e: %d scrapes under load, %d counter readings, none fell" % (n, checked))
sys.exit(0 if n >= 250 else 1)
PY

# -- SIGUSR1: counters in the log, and the node keeps serving
kill -USR1 "$PID1"
t=0
until grep -q "served reads=" "$TMP/n1.log"; do t=$((t + 1)); [ $t -gt 50 ] && fail "no counters after SIGUSR1"; sleep 0.1; done
kill -0 "$PID1" || fail "SIGUSR1 killed pcd"
[ "$(curl -s "http://$EP1/readyz")" = ready ] || fail "n1 not ready after SIGUSR1"
grep "served reads=" "$TMP/n1.log"

# -- pcctl stats
"$BIN/pcctl" stats $EPS | tee "$TMP/pcctl.txt"
[ "$(grep -c ' yes ' "$TMP/pcctl.txt")" = 3 ] || fail "pcctl stats: not 3 ready rows"
"$BIN/pcctl" stats --json $EPS > "$TMP/pcctl.json"
python3 - "$TMP" <<'PY' || fail "pcctl stats --json"
import json, re, sys
tmp = sys.argv[1]
nodes = json.load(open(tmp + "/pcctl.json"))
assert [n["node"] for n in nodes] == ["n0", "n1", "n2"], nodes
for i, n in enumerate(nodes):
    assert n["ready"] is True
    got = sum(s["value"] for s in n["samples"] if s["name"] == "peercache_served_ops_total")
    text = open("%s/after.%d" % (tmp, i)).read()
    before = sum(int(v) for v in re.findall(r'^peercache_served_ops_total\{[^}]*\} (\d+)$', text, re.M))
    assert got >= before > 0, (got, before)
print("metrics_e2e: pcctl stats --json: 3 nodes, served ops at least the earlier scrape's")
PY

# -- a node dies: the client's log names it once
kill -9 "$PID2"
wait "$PID2" 2>/dev/null || true
"$BIN/pcbench" --topology "$TMP/topo.yaml" --keys $KEYS --page-size 12KiB --batch 32 --iters 3 \
	--ops get --no-raw-tcp --no-verify --prefix e2e > /dev/null 2>"$TMP/bench2.err" || true
n=$(grep -c "warn pcbench: peer n2 (127.0.0.1:$((BASE + 2))): " "$TMP/bench2.err" || true)
[ "$n" = 1 ] || { cat "$TMP/bench2.err"; fail "expected one warning for n2, got $n"; }
grep "peer n2" "$TMP/bench2.err"

# -- log format
kill "$PID0" "$PID1"
wait "$PID0" "$PID1" 2>/dev/null || true
for i in 0 1; do
	grep -q "stopped" "$TMP/n$i.log" || fail "n$i did not stop cleanly"
	if grep -Ev "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z (error|warn|info|debug) pcd n$i: " "$TMP/n$i.log"; then
		fail "n$i: lines not in the log format"
	fi
done
echo "metrics_e2e: 1 passed, 0 failed"
