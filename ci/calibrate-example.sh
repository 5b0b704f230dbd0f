#!/bin/sh
# calibrate-example.sh [BUILD] - the calibration tables of docs/simulator.md: runs the
# sim.calibrate test (tests/e2e/calib_test.c: a 2-node tcp cluster on loopback,
# pccalibrate on n0, the held-back workloads, then a cluster that spills) and puts
# pccalibrate's markdown and the machine it ran on between the "BEGIN calibration"
# and "END calibration" markers.
# The figures are measured, so they move from run to run (the tables say by how
# much); run it on a machine doing nothing else. Ten seconds or so.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
T=$(mktemp -d /tmp/pc-calib.XXXXXX)
trap 'rm -rf "$T"' EXIT
# the test fails when a prediction is outside its bounds; the tables say so too
PC_CALIB_OUT=$T "$B/tests/calib_test" "$B/tools/pcd" "$B/sim/pccalibrate" "$B/sim/pcsim" \
	>"$T/test.log" 2>&1 || echo "calibrate-example: the test failed (see below); tables kept"
[ -s "$T/cal.md" ] || { cat "$T/test.log"; exit 1; }
{
	printf 'Measured by `ci/calibrate-example.sh` on %s, %s, commit %s:\n\n' \
		"$(sed -n 's/^  machine: "\(.*\)"$/\1/p' "$T/cal.yaml")" \
		"$(sed -n 's/^  date: //p' "$T/cal.yaml")" "$(sed -n 's/^  commit: //p' "$T/cal.yaml")"
	sed 's/^## /#### /; s,`mooncake:/[^`]*/trace.jsonl`,`mooncake:trace.jsonl`,
	     s|^#### Calibration (.*/model.yaml|#### Calibration (2 nodes on loopback, a core each|' "$T/cal.md"
	printf '\n#### With spill (the same file, a cluster that spills to disk)\n'
	sed -n '/^| workload/,$p' "$T/spill.md" | sed '1s/^/\n/'
} >"$T/block"
./ci/splice-block.sh docs/simulator.md calibration "$T/block"
tail -3 "$T/test.log"
echo "calibrate-example: docs/simulator.md updated"
