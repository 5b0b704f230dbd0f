#!/bin/sh
# run.sh BUILD_DIR [SECONDS] [TARGET...] - fuzz each target for SECONDS (default 20)
# from its checked-in seed corpus, with ASan+UBSan (a PC_FUZZ=ON build). New inputs
# go to a scratch corpus, never into the tree. Prints each target's executions and
# exits 1 on the first crash, leak, timeout or sanitizer report (the input is kept
# as BUILD_DIR/fuzz-artifacts/crash-*; make it a regression test).
set -eu
build=$1
secs=${2:-20}
shift; [ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")" && pwd)
targets=${*:-"tcp_frame rpc_server rpc_client slot_gate topology trace"}
art="$build/fuzz-artifacts"
mkdir -p "$art"
total=0
for t in $targets; do
	bin="$build/tests/fuzz/fuzz_$t"
	work=$(mktemp -d)
	log="$art/$t.log"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
		-print_final_stats=1 -artifact_prefix="$art/" "$work" "$here/corpus/$t" >"$log" 2>&1 || {
		echo "fuzz $t: FAILED (see $log)"
		tail -30 "$log"
		rm -rf "$work"
		exit 1
	}
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	total=$((total + ${runs:-0}))
	echo "fuzz $t: ${runs:-0} executions in ${secs}s, no crash"
	rm -rf "$work"
done
echo "fuzz: $total executions in all, no crash"
