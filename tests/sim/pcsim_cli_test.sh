#!/bin/sh
# pcsim_cli_test.sh PCSIM TOPOLOGIES - pcsim as a planner's tool: configurations
# numbered from 1 and named by their swept values everywhere, --out refusing an
# earlier run unless --force, traces whose broken lines are counted and named (and
# that fail with none parseable), and a generated workload that runs without rate=.
set -u
PCSIM=$1
TOPO=$2/rack.yaml
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp -d /tmp/pc-pcsim.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$PCSIM" --topology "$TOPO" --workload zipf:keys=4000,requests=400,pages=4 --mode hitrate \
	--sweep store.global_segment_size=1GiB,2GiB --sweep store.slot_ways=2,4 \
	--find "hit>=0.01" --out "$T/a" >"$T/a.out" 2>"$T/a.err"
rc=$?
[ $rc = 0 ] && ok "a 2x2 sweep runs" || { bad "the sweep: exit $rc"; cat "$T/a.err"; }
[ -f "$T/a/config-1.yaml" ] && [ -f "$T/a/config-4.yaml" ] && [ ! -e "$T/a/config-0.yaml" ] &&
	ok "config-1..4.yaml" || bad "config files: $(ls "$T/a")"
grep -q "^pcsim: config 4/4 (global_segment_size=2GiB slot_ways=4) seed 1/1: " "$T/a.err" &&
	ok "each configuration's line names its swept values" || { bad "config lines"; cat "$T/a.err"; }
if python3 - "$T/a/summary.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["config"] for r in rows] == ["1", "2", "3", "4"], rows
assert rows[1]["label"] == "global_segment_size=2GiB slot_ways=2", rows[1]["label"]
# slot_ways does not change the slot memory: two lines in hitrate.png, by ways
assert [r["series"] for r in rows] == ["1", "1", "2", "2"], [r["series"] for r in rows]
for col in ("page_hit_host_rate", "sim_memory_bytes", "network_bytes", "owned_pages_max_over_mean"):
    assert col in rows[0], col
PY
then ok "summary.csv: configs 1..4, labels, series, column names"; else bad "summary.csv"; fi
grep -q "config [1-4] (.*): global_segment_size=1GiB slot_ways=" "$T/a.out" &&
	ok "find names the configuration by its values" || bad "find line: $(cat "$T/a.out")"

"$PCSIM" --topology "$TOPO" --workload zipf:keys=4000,requests=400 --mode hitrate --out "$T/a" \
	>/dev/null 2>"$T/b.err"
rc=$?
[ $rc = 2 ] && grep -q "not empty" "$T/b.err" && ok "an earlier run's --out is refused (exit 2)" ||
	bad "--out over an earlier run: exit $rc, $(cat "$T/b.err")"
"$PCSIM" --topology "$TOPO" --workload zipf:keys=4000,requests=400 --mode hitrate --out "$T/a" \
	--force >/dev/null 2>&1 && ok "--force writes over it" || bad "--force"

printf '{"timestamp": 0, "input_length": 1024, "hash_ids": [1, 2]}\nnot json\n\n{"timestamp": 9}\n' >"$T/part.jsonl"
"$PCSIM" --topology "$TOPO" --workload "$T/part.jsonl" --out "$T/c" >/dev/null 2>"$T/c.err"
rc=$?
[ $rc = 0 ] && grep -q "2 of 3 lines are not requests .*line 2: not JSON.*line 4: no hash_ids" "$T/c.err" &&
	ok "broken trace lines counted and named" || bad "partial trace: exit $rc, $(head -2 "$T/c.err")"
printf 'x\ny\n' >"$T/none.jsonl"
"$PCSIM" --topology "$TOPO" --workload "$T/none.jsonl" --out "$T/d" >/dev/null 2>"$T/d.err"
rc=$?
[ $rc = 1 ] && grep -q "no request in the trace" "$T/d.err" && ok "a trace with no request fails (exit 1)" ||
	bad "empty trace: exit $rc"

"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=300 --out "$T/e" >/dev/null 2>"$T/e.err" &&
	ok "zipf:keys=1000 runs in timing mode without rate=" || { bad "default rate"; cat "$T/e.err"; }

# An event time that is no time (negative, nan, inf) is refused, not run at 2^64 ns.
for at in -1 nan inf; do
	"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=50 --mode hitrate \
		--event "leave:r01@$at" --out "$T/f$at" >/dev/null 2>"$T/f.err"
	rc=$?
	[ $rc = 2 ] && grep -q "leave:r01@$at" "$T/f.err" && ok "--event leave:r01@$at refused" ||
		bad "--event leave:r01@$at: exit $rc, $(cat "$T/f.err")"
done

# A --find target without a number, or a hit rate past 1 (80 for 80%), is refused.
for fx in "hit>=" "hit>=80" "p99<=ms" "hit>=nan"; do
	"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=50 --mode hitrate \
		--find "$fx" --out "$T/g" --force >/dev/null 2>"$T/g.err"
	rc=$?
	[ $rc = 2 ] && grep -q -- "--find $fx" "$T/g.err" && ok "--find $fx refused" ||
		bad "--find $fx: exit $rc, $(cat "$T/g.err")"
done

# --seeds past what the run counter holds is refused, not cut to 0 runs.
"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=50 --mode hitrate \
	--seeds 4294967296 --out "$T/h" >/dev/null 2>"$T/h.err"
rc=$?
[ $rc = 2 ] && grep -q -- "--seeds 4294967296" "$T/h.err" && ok "--seeds 2^32 refused" ||
	bad "--seeds 2^32: exit $rc, $(cat "$T/h.err")"

# Sweeps whose product of values passes what a run takes are refused, not wrapped:
# 64^6 = 2^36 configurations made an int of 0, and the run ran none and exited 0.
v=$(seq -s, 1 64)
"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=50 --mode hitrate \
	--sweep store.slot_ways=$v --sweep store.slot_ways=$v --sweep store.slot_ways=$v \
	--sweep store.slot_ways=$v --sweep store.slot_ways=$v --sweep store.slot_ways=$v \
	--out "$T/j" >/dev/null 2>"$T/j.err"
rc=$?
[ $rc = 2 ] && grep -q -- "more than 1048576 configurations" "$T/j.err" &&
	ok "2^36 configurations refused" || bad "2^36 configurations: exit $rc, $(head -c 300 "$T/j.err")"

# An --interval or --duration that nanoseconds in 64 bits cannot hold is refused:
# 1e-10 s is 0 ns (no time series at all), 1e12 s past 2^64 ns.
for a in "--interval 1e-10" "--interval 1e12" "--duration 1e12"; do
	"$PCSIM" --topology "$TOPO" --workload zipf:keys=1000,requests=50 $a --out "$T/i" --force \
		>/dev/null 2>"$T/i.err"
	rc=$?
	[ $rc = 2 ] && grep -q -- "$a" "$T/i.err" && ok "$a refused" ||
		bad "$a: exit $rc, $(cat "$T/i.err")"
done

echo "pcsim: $pass passed, $fail failed"
[ $fail = 0 ]
