#!/bin/sh
# pctopo_buckets_test.sh PCTOPO - pctopo's count of the keys a full bucket evicts:
# on one node (no ring between the keys and the buckets) with 16384 buckets, the
# keys beyond their bucket's ways at 50, 80 and 100 % of the slots are what a
# Poisson count gives for random buckets, for 4 ways and for 8. A count that took
# buckets for keys, a full bucket's keys for its overflow, or the wrong number of
# keys is off by far more than the half point allowed here.
set -u
PCTOPO=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

for ways in 4 8; do
	cat >"$T/t.yaml" <<YAML
name: buckets
store:
  mode: slotmap
  protocol: tcp
  slot_max_page_bytes: 4KiB
  slot_ways: $ways
  slot_num_buckets: 16384
nodes:
  - {name: n0, address: 127.0.0.1, port: 1}
YAML
	out=$("$PCTOPO" --topology "$T/t.yaml" --keys 1) || { echo "FAIL pctopo: exit $?"; exit 1; }
	slots=$((16384 * ways))
	echo "$out" | grep -q "class 0 ($ways ways, $slots slots over 1 nodes)" ||
		{ echo "FAIL $ways ways: no line naming $slots slots"; fails=$((fails + 1)); }
	for pct in 50 80 100; do
		line=$(echo "$out" | grep "at *$pct % of the slots")
		# "at  80 % of the slots:  12.51 % of the keys   (... even ring: 12.32 %)"
		verdict=$(echo "$line" | awk '{ got = $7; want = $(NF - 1);
			d = got - want; if (d < 0) d = -d;
			print (got != "" && want > 0 && d <= 0.5) ? "ok" : "off" }')
		if [ "$verdict" = ok ]; then
			echo "PASS $ways ways at $pct %: $line"
		else
			echo "FAIL $ways ways at $pct %: '$line'"
			fails=$((fails + 1))
		fi
	done
done
echo "pctopo_buckets: $fails failed"
[ "$fails" -eq 0 ]
