#!/bin/sh
# pcctl_stats_test.sh PCCTL [sanitized] - pcctl stats against stand-in endpoints (python's
# http.server on ::1 and an ephemeral port, serving fixed /metrics and /readyz):
# an IPv6 endpoint is taken as [::1]:PORT, the way pcd --metrics-addr takes it;
# the peers down are the peer_up samples at 0, and none for a pcd still starting
# (its endpoint serves peercache_ready 0 and nothing else); an answer cut short
# is read no further than it came (under valgrind; a sanitizer build's pcctl, which
# valgrind cannot run, as it is).
set -u
PCCTL=$1
CHECK="valgrind -q --error-exitcode=9"
[ "${2:-}" = sanitized ] && CHECK=
T=$(mktemp -d)
fails=0
servers=
trap 'kill $servers 2>/dev/null; rm -rf "$T"' EXIT

# serve DIR: serve DIR/metrics and DIR/readyz; the port in DIR.port
serve() {
	python3 - "$1" <<'PY' &
import http.server, socket, sys, functools, os
class V6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
s = V6(("::1", 0), functools.partial(Quiet, directory=sys.argv[1]))
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1] + ".port")
s.serve_forever()
PY
	servers="$servers $!"
	for i in $(seq 50); do [ -f "$1.port" ] && break; sleep 0.1; done
}

# row WHAT ENDPOINT PATTERN: pcctl stats ENDPOINT prints a row matching PATTERN
row() {
	out=$("$PCCTL" stats "$2" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ] && echo "$out" | grep -Eq "$3"; then
		echo "PASS $1: $(echo "$out" | sed -n 2p)"
	else
		echo "FAIL $1: exit $rc: $out"
		fails=$((fails + 1))
	fi
}

mkdir "$T/up" "$T/starting"
cat >"$T/up/metrics" <<'TEXT'
# TYPE peercache_ready gauge
peercache_ready{node="n0"} 1
# TYPE peercache_topology_nodes gauge
peercache_topology_nodes{node="n0"} 3
# TYPE peercache_peer_up gauge
peercache_peer_up{node="n0",peer="n1"} 1
peercache_peer_up{node="n0",peer="n2"} 0
TEXT
echo ready >"$T/up/readyz"
cat >"$T/starting/metrics" <<'TEXT'
# TYPE peercache_ready gauge
peercache_ready 0
TEXT
serve "$T/up"
serve "$T/starting"

row "[::1]:PORT, one peer down" "[::1]:$(cat "$T/up.port")" "^n0 .* 1$"
row "a pcd still starting" "[::1]:$(cat "$T/starting.port")" " no .* 0$"
# An answer cut short ("HTTP/" and the connection closed) is "not an HTTP
# answer", read within what arrived: valgrind sees no byte past it read.
if [ -z "$CHECK" ] || command -v valgrind >/dev/null; then
	python3 - "$T/raw" <<'PY' &
import socket, sys, os
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1] + ".port")
c, _ = s.accept()
c.recv(1000)
c.sendall(b"HTTP/")
c.close()
PY
	servers="$servers $!"
	for i in $(seq 50); do [ -f "$T/raw.port" ] && break; sleep 0.1; done
	out=$($CHECK "$PCCTL" stats "127.0.0.1:$(cat "$T/raw.port")" 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && echo "$out" | grep -q "not an HTTP answer" &&
	   ! echo "$out" | grep -q "uninitialised"; then
		echo "PASS an answer cut short: $(echo "$out" | tail -1)"
	else
		echo "FAIL an answer cut short: exit $rc: $out"
		fails=$((fails + 1))
	fi
else
	echo "SKIP an answer cut short: no valgrind"
fi
echo "pcctl_stats: $fails failed"
[ "$fails" -eq 0 ]
