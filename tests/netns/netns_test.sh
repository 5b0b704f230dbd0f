#!/bin/sh
# netns_test.sh - the 3-node slotmap round trip across three network namespaces
# joined by veth pairs to a bridge (in a fifth namespace): pcd runs n0, n1 and n2
# in their own namespaces; pages are written from n0's namespace and read back,
# byte for byte, from n1's and n2's. Then n3, in a fourth namespace and listed in
# no topology but its own, joins through n1 (store.discovery_addr), is seen up from
# n0's and n2's namespaces, takes writes, and leaves on SIGTERM.
#
#   netns_test.sh PCD PCBENCH PCCTL
#
# Needs root and iproute2. Where namespaces cannot be made it says why and exits
# 77, which CTest reports as skipped (never as passed). Everything it creates is
# removed on exit, also on failure; every load is bounded.
set -u
PCD=$1
PCBENCH=$2
PCCTL=$3
ID="pc$$"
NET="198.18.$(( $$ % 250 + 1 ))"
TMP=$(mktemp -d /tmp/pcnetns.XXXXXX)
PIDS=""

cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	for n in 0 1 2 3 br; do ip netns del "$ID-$n" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

skip() { echo "netns_test: SKIP: $*"; exit 77; }
fail() { echo "netns_test: FAIL: $*"; for f in "$TMP"/*.log; do [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f"; done; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
ip netns add "$ID-br" 2>"$TMP/err" || skip "cannot create a network namespace: $(cat "$TMP/err")"
ip -n "$ID-br" link add br0 type bridge 2>"$TMP/err" || skip "cannot create a bridge: $(cat "$TMP/err")"
ip -n "$ID-br" link set br0 up
for n in 0 1 2 3; do
	ip netns add "$ID-$n" || fail "ip netns add $ID-$n"
	ip link add "$ID-v$n" type veth peer name "$ID-b$n" || fail "veth pair for n$n"
	ip link set "$ID-v$n" netns "$ID-$n"
	ip link set "$ID-b$n" netns "$ID-br"
	ip -n "$ID-br" link set "$ID-b$n" master br0 up
	ip -n "$ID-$n" link set "$ID-v$n" name eth0
	ip -n "$ID-$n" addr add "$NET.$((n + 1))/24" dev eth0
	ip -n "$ID-$n" link set eth0 up
	ip -n "$ID-$n" link set lo up
done

MEMBERS="heartbeat_ms: 100, failure_timeout_ms: 500, max_nodes: 4"
cat > "$TMP/topo.yaml" <<YAML
name: netns
store: {slot_size_classes: [16KiB], global_segment_size: 32MiB, timeout_ms: 2000, $MEMBERS}
nodes:
  - {name: n0, address: $NET.1, port: 31998}
  - {name: n1, address: $NET.2, port: 31998}
  - {name: n2, address: $NET.3, port: 31998}
YAML

for n in 0 1 2; do
	ip netns exec "$ID-$n" "$PCD" --topology "$TMP/topo.yaml" --node "n$n" 2>"$TMP/pcd-n$n.log" &
	PIDS="$PIDS $!"
done
for n in 0 1 2; do
	i=0
	until grep -q "serving on" "$TMP/pcd-n$n.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 100 ] && fail "pcd n$n did not start"; sleep 0.1
	done
done
echo "netns_test: 3 namespaces on $NET.0/24 joined by a bridge; pcd n0, n1, n2 ready"

BENCH="--topology $TMP/topo.yaml --keys 512 --batch 64 --page-size 12KiB --no-raw-tcp --prefix netns"
ip netns exec "$ID-0" timeout 60 "$PCBENCH" $BENCH --ops set,exists >"$TMP/write.log" 2>&1 \
	|| fail "writing from n0's namespace"
sed 's/^/  n0 ns: /' "$TMP/write.log"
for n in 1 2; do
	ip netns exec "$ID-$n" timeout 60 "$PCBENCH" $BENCH --ops get --iters 1 --min-hits 99 \
		>"$TMP/read$n.log" 2>&1 || { cat "$TMP/read$n.log"; fail "reading from n$n's namespace"; }
	sed "s/^/  n$n ns: /" "$TMP/read$n.log"
done

# n3: its topology lists only itself and asks n1 for the rest
cat > "$TMP/join.yaml" <<YAML
name: netns
store: {slot_size_classes: [16KiB], global_segment_size: 32MiB, timeout_ms: 2000, $MEMBERS, discovery_addr: "$NET.2:31998"}
nodes:
  - {name: n3, address: $NET.4, port: 31998}
YAML
ip netns exec "$ID-3" "$PCD" --topology "$TMP/join.yaml" --node n3 2>"$TMP/pcd-n3.log" &
N3=$!
PIDS="$PIDS $N3"
sees() {	# sees NS NODE STATE: within 5 s, pcctl in namespace NS says NODE is STATE
	i=0
	until ip netns exec "$ID-$1" "$PCCTL" --discovery "$NET.$(($1 + 1)):31998" status 2>/dev/null |
		grep -q "^$2 .* $3 "; do
		i=$((i + 1)); [ $i -gt 50 ] && return 1; sleep 0.1
	done
}
for n in 0 2; do
	sees $n n3 up || fail "n$n's namespace does not see n3 up after it joined"
done
grep -q "this node is entry 3" "$TMP/pcd-n3.log" || fail "n3 did not log its entry"
echo "netns_test: n3 joined from a fourth namespace through n1; n0 and n2 see it up"
ip netns exec "$ID-3" timeout 60 "$PCBENCH" --topology "$TMP/join.yaml" --keys 512 --batch 64 \
	--page-size 12KiB --no-raw-tcp --prefix joined --ops set,get --iters 1 --min-hits 99 \
	>"$TMP/joined.log" 2>&1 || { cat "$TMP/joined.log"; fail "writing and reading from n3's namespace"; }
sed 's/^/  n3 ns: /' "$TMP/joined.log"
kill -TERM $N3
wait $N3 || fail "n3 did not stop cleanly on SIGTERM"
for n in 0 2; do
	sees $n n3 left || fail "n$n's namespace does not see n3 leave"
done
echo "netns_test: PASS: written from n0's namespace, read back byte-identical from n1's and n2's; n3 joined from a fourth and left"
