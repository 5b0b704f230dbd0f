#!/bin/sh
# bench-auth.sh - what the cluster secret costs: pcbench set/get against two 1-node
# clusters on loopback, one with store.auth_secret_file and one without, measured
# alternately in one run (ROUNDS pairs, each pcbench a new process and so new
# connections, each with its handshake; 4096 keys, so the sets' 64 batches are not
# the first connect alone). Prints every pair and the median pages/s
# of each side and their ratio. pcd is pinned to CPU 1, pcbench to CPU 0, as in
# ci/bench.sh. Usage: ci/bench-auth.sh [BUILD_DIR] [ROUNDS] [PAGE_SIZE]
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-7}
PAGE=${3:-12KiB}
TMP=$(mktemp -d /tmp/pcbench-auth.XXXXXX)
BASE=$(( 20000 + $$ % 20000 ))
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

head -c 32 /dev/urandom | base64 > "$TMP/secret"
chmod 600 "$TMP/secret"
for side in plain auth; do
	port=$BASE
	extra=""
	if [ $side = auth ]; then port=$((BASE + 1)); extra=", auth_secret_file: $TMP/secret"; fi
	cat > "$TMP/$side.yaml" <<YAML
name: bench-$side
store: {slot_size_classes: [16KiB, 64KiB, 256KiB], global_segment_size: 768MiB$extra}
nodes:
  - {name: n0, address: 127.0.0.1, port: $port}
YAML
	taskset -c 1 "$BUILD/tools/pcd" --topology "$TMP/$side.yaml" --node n0 2>"$TMP/pcd-$side.log" &
	PIDS="$PIDS $!"
done
for side in plain auth; do
	i=0
	until grep -q "serving on" "$TMP/pcd-$side.log"; do
		i=$((i + 1)); [ $i -gt 600 ] && { cat "$TMP/pcd-$side.log"; exit 1; }; sleep 0.1
	done
done

run() {	# side -> "set_pages_per_s get_pages_per_s"
	"$BUILD/tools/pcbench" --topology "$TMP/$1.yaml" --page-size "$PAGE" --keys 4096 \
		--batch 64 --iters 20 --ops set,get --no-raw-tcp --cpu 0 --server-cpu 1 \
		--prefix "r$1" 2>&1 | awk '$1 == "set" && $2 ~ /^[0-9]+$/ { s = $3; if ($9 + 0 < 99) bad = 1 }
					   $1 == "get" && $2 ~ /^[0-9]+$/ { g = $3; if ($9 + 0 < 99) bad = 1 }
					   END { if (bad || s == "" || g == "") print "FAIL"; else print s, g }'
}

echo "round  plain_set  auth_set  plain_get  auth_get   (pages/s, $PAGE pages, batch 64)"
: > "$TMP/pairs"
r=1
while [ $r -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then p=$(run plain); a=$(run auth); else a=$(run auth); p=$(run plain); fi
	case "$p $a" in *FAIL*) echo "bench-auth.sh: a run stored or hit fewer than 99% of its pages" >&2; exit 1;; esac
	set -- $p $a
	printf "%5d %10s %9s %10s %9s\n" "$r" "$1" "$3" "$2" "$4"
	echo "$1 $3 $2 $4" >> "$TMP/pairs"
	r=$((r + 1))
done
med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ps=$(cut -d' ' -f1 "$TMP/pairs" | med); as=$(cut -d' ' -f2 "$TMP/pairs" | med)
pg=$(cut -d' ' -f3 "$TMP/pairs" | med); ag=$(cut -d' ' -f4 "$TMP/pairs" | med)
# a pair runs back to back, under the same load from whatever shares the machine:
# the median of the pairs' ratios is the figure that noise moves least
rs=$(awk '{ print $2 / $1 }' "$TMP/pairs" | med); rg=$(awk '{ print $4 / $3 }' "$TMP/pairs" | med)
awk -v ps="$ps" -v as="$as" -v pg="$pg" -v ag="$ag" -v rs="$rs" -v rg="$rg" 'BEGIN {
	printf "median  set: %.0f without the secret, %.0f with it; median of the pairs: %.3fx\n", ps, as, rs
	printf "median  get: %.0f without the secret, %.0f with it; median of the pairs: %.3fx\n", pg, ag, rg }'
