#!/bin/sh
# pctopo_room_test.sh PCTOPO - pctopo checks a topology with room for nodes to join
# (store.max_nodes): the vacant entries of its node table have no address and are
# not resolved, so the listed nodes are reported and the exit code is 0; the load
# spread is over the listed nodes; with none listed there is nothing to place.
set -u
PCTOPO=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

cat >"$T/room.yaml" <<YAML
name: room
store: {max_nodes: 4}
nodes:
  - {name: n0, address: 127.0.0.1, port: 1}
  - {name: n1, address: 127.0.0.1, port: 2}
YAML
out=$("$PCTOPO" --topology "$T/room.yaml" --keys 100 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && echo "$out" | grep -q "^  n1 "; then
	echo "PASS max_nodes room: exit 0, the listed nodes placed"
else
	echo "FAIL max_nodes room: exit $rc: $out"
	fails=$((fails + 1))
fi

# The same two nodes without the room: the same ring, so the same load spread.
sed '/max_nodes/d' "$T/room.yaml" >"$T/listed.yaml"
want=$("$PCTOPO" --topology "$T/listed.yaml" --keys 100 2>&1 | grep "load spread")
got=$(echo "$out" | grep "load spread")
if [ -n "$want" ] && [ "$got" = "$want" ]; then
	echo "PASS max_nodes room: $got"
else
	echo "FAIL max_nodes room: '$got', without the room '$want'"
	fails=$((fails + 1))
fi

# No node listed yet: every node joins at run time; nothing to place, no crash.
cat >"$T/none.yaml" <<YAML
name: none
store: {max_nodes: 4, discovery_addr: "127.0.0.1:31998"}
YAML
out=$("$PCTOPO" --topology "$T/none.yaml" --keys 100 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && echo "$out" | grep -q "no nodes listed"; then
	echo "PASS no node listed: exit 0"
else
	echo "FAIL no node listed: exit $rc: $out"
	fails=$((fails + 1))
fi
echo "pctopo_room: $fails failed"
[ "$fails" -eq 0 ]
