#!/bin/sh
# pcctl_stats_test.sh PCCTL - pcctl stats against a stand-in endpoint (python's
# http.server on an ephemeral port, serving fixed /metrics and /readyz): an IPv6
# endpoint is taken as [::1]:PORT, the way pcd --metrics-addr takes it.
set -u
PCCTL=$1
T=$(mktemp -d)
fails=0

mkdir "$T/www"
cat >"$T/www/metrics" <<'TEXT'
# TYPE peercache_ready gauge
peercache_ready{node="n0"} 1
# TYPE peercache_topology_nodes gauge
peercache_topology_nodes{node="n0"} 3
# TYPE peercache_peer_up gauge
peercache_peer_up{node="n0",peer="n1"} 1
peercache_peer_up{node="n0",peer="n2"} 0
TEXT
echo ready >"$T/www/readyz"
python3 - "$T" <<'PY' &
import http.server, socket, sys, functools
class V6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass
h = functools.partial(Quiet, directory=sys.argv[1] + "/www")
s = V6(("::1", 0), h)
open(sys.argv[1] + "/port.tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
s.serve_forever()
PY
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 50); do [ -f "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port")

out=$("$PCCTL" stats "[::1]:$port" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && echo "$out" | grep -q "^n0 "; then
	echo "PASS [::1]:$port: $(echo "$out" | tail -1)"
else
	echo "FAIL [::1]:$port: exit $rc: $out"
	fails=$((fails + 1))
fi
echo "pcctl_stats: $fails failed"
[ "$fails" -eq 0 ]
