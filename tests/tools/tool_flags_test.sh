#!/bin/sh
# tool_flags_test.sh PCD PCCTL - a number flag out of its range is a bad command line:
# exit 2 and one line naming the flag, never a value wrapped or cut to fit (a
# --timeout-ms of 2^32 that became 0, a --stats of 2^64 - 1 that became -1 s); so is
# a --metrics-addr whose port cannot be told from an IPv6 address or whose host does
# not resolve.
set -u
PCD=$1
PCCTL=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

# expect WHAT FLAG COMMAND...: exit 2 and stderr naming FLAG
expect() {
	what=$1
	flag=$2
	shift 2
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq 2 ] && echo "$err" | grep -q -- "$flag"; then
		echo "PASS $what: $err"
	else
		echo "FAIL $what: exit $rc: $err"
		fails=$((fails + 1))
	fi
}

expect "pcctl --timeout-ms 2^32" --timeout-ms \
	"$PCCTL" --discovery 127.0.0.1:1 --timeout-ms 4294967296 status
expect "pcctl --timeout-ms 2^32 + 1" --timeout-ms \
	"$PCCTL" --discovery 127.0.0.1:1 --timeout-ms 4294967297 status
expect "pcctl --timeout-ms past 2^64" --timeout-ms \
	"$PCCTL" --discovery 127.0.0.1:1 --timeout-ms 99999999999999999999999 status
expect "pcctl --timeout-ms ' -1'" --timeout-ms \
	"$PCCTL" --discovery 127.0.0.1:1 --timeout-ms " -1" status
expect "pcd --stats 2^64 - 1" --stats "$PCD" --node n0 --stats 18446744073709551615
expect "pcd --stats past 2^64" --stats "$PCD" --node n0 --stats 18446744073709551616
expect "pcd --host-blocks ' -1'" --host-blocks "$PCD" --node n0 --host-blocks " -1"
# an IPv6 address without brackets: "::1" is no host "::" on port 1
expect "pcd --metrics-addr ::1" "--metrics-addr ::1: .*\[::1\]:9100" \
	"$PCD" --node n0 --metrics-addr ::1
expect "pcd --metrics-addr fd00::1:80" "--metrics-addr fd00::1:80: .*\[::1\]:9100" \
	"$PCD" --node n0 --metrics-addr fd00::1:80
expect "pcd --metrics-addr [::1]" "--metrics-addr \[::1\]: .*\[::1\]:9100" \
	"$PCD" --node n0 --metrics-addr "[::1]"
# a host that does not resolve is a bad flag too, like a node address that does not
# (pcd stops before it serves anything, so no port is taken)
printf 'nodes:\n  - {name: n0, address: 127.0.0.1, port: 1}\n' >"$T/one.yaml"
expect "pcd --metrics-addr no.such.host.invalid:0" "--metrics-addr no.such.host.invalid:0: .* resolve" \
	timeout 10 "$PCD" --topology "$T/one.yaml" --node n0 --metrics-addr no.such.host.invalid:0
echo "tool_flags: $fails failed"
[ "$fails" -eq 0 ]
