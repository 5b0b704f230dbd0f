#!/bin/sh
# plan-example.sh [BUILD] - the worked capacity-planning example of docs/simulator.md:
# runs its pcsim sweep and its leave/join run, copies their plots to
# docs/plan-hitrate.png and docs/plan-leave-join.png, and rewrites the table between
# the "BEGIN plan" and "END plan" markers of docs/simulator.md from summary.csv and
# find.txt. The simulation is in virtual time, so the figures (not the wall times)
# are the same on any machine for the same code. About a minute on 2 cores.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
T=$(mktemp -d /tmp/pc-plan.XXXXXX)
trap 'rm -rf "$T"' EXIT
WL="prefix:groups=2000,prompts=20,prefix=32,suffix=4,requests=50000,rate=1000,group_s=0.8"

"$B/sim/pcsim" --topology topologies/rack.yaml --workload "$WL" \
	--sweep store.global_segment_size=4GiB,8GiB,16GiB,32GiB,64GiB \
	--find "hit>=0.8,p99<=5ms" --out "$T/plan"
"$B/sim/pcsim" --topology topologies/rack.yaml --workload "$WL" \
	--set store.global_segment_size=32GiB --event leave:r05@20 --event join:r05@35 \
	--interval 0.5 --out "$T/churn"
cp "$T/plan/hitrate.png" docs/plan-hitrate.png
cp "$T/churn/timeseries.png" docs/plan-leave-join.png

# the table: one row per configuration, columns by name (quoted fields hold commas)
python3 - "$T/plan/summary.csv" "$T/plan/find.txt" >"$T/table" <<'PY'
import csv, sys
print("| store.global_segment_size | cluster slot memory | token hit rate | p50 | p99 | NIC utilisation |")
print("|---|---|---|---|---|---|")
for r in csv.DictReader(open(sys.argv[1])):
    print("| %s | %.0f GiB | %.3f | %.2f ms | %.2f ms | %.2f |" % (
        r["store.global_segment_size"], int(r["cluster_slot_bytes"]) / 2**30,
        float(r["token_hit_rate"]), float(r["p50_us"]) / 1000, float(r["p99_us"]) / 1000,
        float(r["nic_util_mean"])))
print()
print("`find.txt`: %s" % open(sys.argv[2]).read().strip())
PY
./ci/splice-block.sh docs/simulator.md plan "$T/table"
echo "plan-example: docs/simulator.md, docs/plan-hitrate.png and docs/plan-leave-join.png updated"
