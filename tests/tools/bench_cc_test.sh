#!/bin/sh
# bench_cc_test.sh MODULE PYTHON - the preload ci/bench.sh gives its peers
# (tools/pcbench/bench_cc_preload.c): a listening TCP socket takes the congestion
# control PC_BENCH_CC names, one without it keeps the system's, a Unix socket is
# left alone, and a name the kernel refuses stops the process with a line naming it.
set -u
MOD=$1 PY=$2
fails=0

# The congestion control of a socket the interpreter listens on, under the preload
# with the environment given ("" when the process failed).
listen_cc() {
	env "$@" LD_PRELOAD="$MOD" "$PY" -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode())'
}

check() {
	if [ "$2" = "$3" ]; then
		echo "PASS $1"
	else
		echo "FAIL $1: got '$2', want '$3'"
		fails=$((fails + 1))
	fi
}

sys_cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
# reno is built into every kernel; where it is the system's, cubic tells them apart
want=reno
[ "$sys_cc" = reno ] && want=cubic

check "PC_BENCH_CC=$want" "$(listen_cc PC_BENCH_CC=$want)" "$want"
check "no PC_BENCH_CC: the system's" "$(listen_cc -u PC_BENCH_CC)" "$sys_cc"
check "PC_BENCH_CC empty: the system's" "$(listen_cc PC_BENCH_CC=)" "$sys_cc"

unix=$(env LD_PRELOAD="$MOD" PC_BENCH_CC=$want "$PY" -c '
import os, socket, tempfile
d = tempfile.mkdtemp(); p = os.path.join(d, "s")
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(); print("listening")
s.close(); os.unlink(p); os.rmdir(d)' 2>&1)
check "a Unix socket left alone" "$unix" "listening"

err=$(listen_cc PC_BENCH_CC=pc_no_such_cc 2>&1 >/dev/null)
rc=$?
check "a refused name: exit status" "$rc" 1
case $err in
*"'pc_no_such_cc' (PC_BENCH_CC) refused"*) check "a refused name: the line names it" ok ok ;;
*) check "a refused name: the line names it" "$err" "bench_cc_preload: ... 'pc_no_such_cc' (PC_BENCH_CC) refused ..." ;;
esac

echo "bench_cc_test: $fails failed"
[ "$fails" -eq 0 ]
