#!/bin/sh
# roce-validate.sh - validate a RoCE (or InfiniBand) pair of hosts for peercache and
# write a report of the store's figures as ratios of perftest's on the same rails.
#
#   roce-validate.sh run --out DIR --devices D0[,D1...] (--local | --server HOST)
#                        [--server-address ADDR] [--sizes 12KiB,64KiB,256KiB]
#                        [--iters N] [--torture-reads N] [--port P]
#   roce-validate.sh report --out DIR [--title TEXT]
#
# run: on this host (the client) and on the server (over ssh: HOST must accept
# `ssh HOST cmd` as root, with perftest and pcd on its PATH; --local runs both ends
# here, as the rxe VM does), for each device (a rail): the port's state, link
# layer, active MTU and its netdev's MTU, and a RoCE v2 IPv4 GID; ib_read_bw and
# ib_write_bw at each size and ib_read_lat at the smallest, client here, server
# there; pcd on the server and pcbench here, over verbs, set / get / exists in
# 64-page batches at each size, on the first rail and on all of them (every page
# verified, the bounce-copy counter read); a short torture pass over this host's
# device (writers and verifying readers, peers stopped and killed: 0 dirty hits).
# Every figure goes into DIR/results.tsv. Exit code 1 when a check, a transfer,
# a verification or the torture pass failed.
# report: DIR/results.tsv into DIR/report.md and DIR/bandwidth.png and
# DIR/ratio.png (gnuplot), the ratios get / ib_read_bw and set / ib_write_bw.
# docs/roce-validate.md says how to run it on a cluster and how to read the report.
#
# Binaries: pcd, pcbench and torture_test from $PC_VALIDATE_BIN (default: build/
# next to this script), perftest's from the PATH.
set -u
cd "$(dirname "$0")" && HERE=$(pwd) && cd - >/dev/null
BIN=${PC_VALIDATE_BIN:-$HERE/../build}
[ -x "$BIN/tools/pcd" ] && BIN_PCD=$BIN/tools/pcd || BIN_PCD=$BIN/pcd
[ -x "$BIN/tools/pcbench" ] && BIN_BENCH=$BIN/tools/pcbench || BIN_BENCH=$BIN/pcbench
[ -x "$BIN/tests/torture_test" ] && BIN_TORTURE=$BIN/tests/torture_test || BIN_TORTURE=$BIN/torture_test

CMD=${1:-}
[ $# -gt 0 ] && shift
OUT="" DEVICES="" LOCAL=0 SERVER="" SADDR="" SIZES="12KiB,64KiB,256KiB" ITERS=3
TREADS=20000 PORT=31990 TITLE="RoCE validation"
usage() { sed -n '4,8p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=$2; shift ;;
	--devices) DEVICES=$(echo "$2" | tr ',' ' '); shift ;;
	--local) LOCAL=1 ;;
	--server) SERVER=$2; shift ;;
	--server-address) SADDR=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--torture-reads) TREADS=$2; shift ;;
	--port) PORT=$2; shift ;;
	--title) TITLE=$2; shift ;;
	*) echo "roce-validate: unknown argument '$1'" >&2; usage ;;
	esac
	shift
done
[ -n "$OUT" ] || { echo "roce-validate: --out DIR is required" >&2; usage; }
mkdir -p "$OUT" || exit 2
RES=$OUT/results.tsv
FAILS=0
say() { echo "roce-validate: $*"; }
bad() { say "FAIL: $*"; FAILS=$((FAILS + 1)); }
row() { printf '%s' "$1"; shift; for f in "$@"; do printf '\t%s' "$f"; done; printf '\n'; } # to RES
bytes_of() {	# 12KiB -> 12288
	echo "$1" | awk '{ n = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u);
		m = (u == "KiB") ? 1024 : (u == "MiB") ? 1048576 : 1; printf "%d\n", n * m }'
}

# ------------------------------------------------------------------ where things run
srv() {		# run a shell command on the server
	if [ "$LOCAL" = 1 ]; then sh -c "$1"; else ssh -o BatchMode=yes "$SERVER" "$1"; fi
}
HOSTS="client"
[ "$LOCAL" = 1 ] || HOSTS="client server"
on() {		# on HOST CMD: client (here) or server
	if [ "$1" = client ]; then sh -c "$2"; else srv "$2"; fi
}

# ------------------------------------------------------------------ 1. host checks
check_host() {	# host: each device's port, link layer, MTUs and GID
	h=$1
	hn=$(on "$h" 'uname -n')
	for d in $DEVICES; do
		p=/sys/class/infiniband/$d/ports/1
		if ! on "$h" "test -d $p"; then
			row check "$hn" "$d" device missing FAIL >> "$RES"; bad "$hn: no RDMA device $d"
			continue
		fi
		st=$(on "$h" "cat $p/state" | sed 's/^[0-9]*: *//')
		ll=$(on "$h" "cat $p/link_layer")
		v=ok; [ "$st" = ACTIVE ] || { v=FAIL; bad "$hn $d: port $st"; }
		row check "$hn" "$d" port_state "$st" "$v" >> "$RES"
		row check "$hn" "$d" link_layer "$ll" ok >> "$RES"
		# the RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d), and its netdev
		g=$(on "$h" "for t in $p/gid_attrs/types/*; do i=\${t##*/}; \
			[ \"\$(cat \$t 2>/dev/null)\" = 'RoCE v2' ] || continue; \
			case \$(cat $p/gids/\$i) in 0000:0000:0000:0000:0000:ffff:*) \
				echo \$i \$(cat $p/gids/\$i) \$(cat $p/gid_attrs/ndevs/\$i); break;; esac; done")
		if [ "$ll" = InfiniBand ]; then
			row check "$hn" "$d" gid "InfiniBand: LID routed" ok >> "$RES"
		elif [ -n "$g" ]; then
			set -- $g
			ip4=$(echo "$2" | awk -F: '{ printf "%d.%d.%d.%d", "0x" substr($7,1,2), "0x" substr($7,3,2), "0x" substr($8,1,2), "0x" substr($8,3,2) }')
			row check "$hn" "$d" gid "index $1: ::ffff:$ip4 on $3 (RoCE v2)" ok >> "$RES"
			nm=$(on "$h" "cat /sys/class/net/$3/mtu")
			row check "$hn" "$d" netdev_mtu "$nm" ok >> "$RES"
		else
			row check "$hn" "$d" gid "no RoCE v2 IPv4 GID" FAIL >> "$RES"
			bad "$hn $d: no RoCE v2 GID of an IPv4 address (give its netdev an address)"
		fi
		am=$(on "$h" "ibv_devinfo -d $d 2>/dev/null" | awk '/active_mtu/ { print $2; exit }')
		v=ok; case "$am" in 4096) ;; "") am=unknown; v=warn ;; *) v=warn ;; esac
		row check "$hn" "$d" active_mtu "$am" "$v" >> "$RES"
	done
}

# ------------------------------------------------------------------ 2. perftest
perf_pair() {	# tool dev size-bytes extra...: prints "GB/s usec" or nothing
	t=$1 d=$2 n=$3; shift 3
	if [ "$LOCAL" = 1 ]; then
		timeout 120 "$t" -d "$d" -F -s "$n" "$@" > "$OUT/$t.srv" 2>&1 &
		i=0; while ! netstat -ltn 2>/dev/null | grep -q ':18515 '; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1; done
		timeout 120 "$t" -d "$d" -F -s "$n" "$@" 127.0.0.1 > "$OUT/$t.cli" 2>&1
		wait
	else
		srv "timeout 120 $t -d $d -F -s $n $* > /tmp/pcv-$t.srv 2>&1 &"
		sleep 1
		timeout 120 "$t" -d "$d" -F -s "$n" "$@" "${SADDR:-$SERVER}" > "$OUT/$t.cli" 2>&1
	fi
	case "$t" in
	*_lat) awk -v n="$n" '$1 == n && NF >= 5 { print "0", $5; exit }' "$OUT/$t.cli" ;;
	*) awk -v n="$n" '$1 == n && NF >= 4 { printf "%.4f -\n", $4 / 8; exit }' "$OUT/$t.cli" ;;
	esac
}

run_perftest() {
	first=$(echo "$SIZES" | cut -d, -f1)
	for d in $DEVICES; do
		for s in $(echo "$SIZES" | tr ',' ' '); do
			n=$(bytes_of "$s")
			for t in ib_read_bw ib_write_bw; do
				r=$(perf_pair "$t" "$d" "$n" -n 1000 --report_gbits)
				if [ -z "$r" ]; then
					bad "$t on $d at $s: no result (see $OUT/$t.cli)"
					continue
				fi
				set -- $r
				row perftest "$t" "$d" "$n" "$1" - >> "$RES"
				say "$t $d $s: $1 GB/s"
			done
		done
		n=$(bytes_of "$first")
		r=$(perf_pair ib_read_lat "$d" "$n" -n 1000)
		set -- ${r:-0 n/a}
		row perftest ib_read_lat "$d" "$n" - "$2" >> "$RES"
		say "ib_read_lat $d $first: typical $2 us"
	done
}

# ------------------------------------------------------------------ 3. pcbench
PCD_PID=""
start_pcd() {	# the server's node s0 on every device
	proto=rdma
	for d in $DEVICES; do [ -e "/sys/class/infiniband/$d/parent" ] && proto=rxe; done
	rails=""
	for d in $DEVICES; do rails="$rails${rails:+, }{device: $d}"; done
	cat > "$OUT/topology.yaml" <<EOF
name: roce-validate
store: {protocol: $proto, fallback: none, slot_size_classes: [16KiB, 64KiB, 256KiB], global_segment_size: 192MiB, timeout_ms: 5000}
nodes:
  - {name: s0, address: ${SADDR:-${SERVER:-127.0.0.1}}, port: $PORT, rails: [$rails]}
EOF
	if [ "$LOCAL" = 1 ]; then
		"$BIN_PCD" --topology "$OUT/topology.yaml" --node s0 > "$OUT/pcd.log" 2>&1 &
		PCD_PID=$!
		i=0; while ! grep -q "serving on" "$OUT/pcd.log"; do
			i=$((i + 1)); [ $i -gt 600 ] && break; sleep 0.1; done
	else
		srv "cat > /tmp/pcv-topology.yaml" < "$OUT/topology.yaml"
		PCD_PID=$(srv "nohup pcd --topology /tmp/pcv-topology.yaml --node s0 > /tmp/pcv-pcd.log 2>&1 & echo \$!")
		sleep 3
	fi
	grep -h "verbs: rail" "$OUT/pcd.log" 2>/dev/null | sed 's/^/roce-validate: server /'
}

stop_pcd() {
	[ -n "$PCD_PID" ] || return 0
	if [ "$LOCAL" = 1 ]; then kill "$PCD_PID" 2>/dev/null; wait "$PCD_PID" 2>/dev/null
	else srv "kill $PCD_PID"; fi
	PCD_PID=""
}

run_pcbench() {
	first=$(echo "$DEVICES" | cut -d' ' -f1)
	all=$(echo "$DEVICES" | tr ' ' ',')
	nr=$(echo "$DEVICES" | wc -w)
	for s in $(echo "$SIZES" | tr ',' ' '); do
		n=$(bytes_of "$s")
		keys=$((67108864 / n)); [ $keys -gt 1024 ] && keys=1024; [ $keys -lt 128 ] && keys=128
		for rails in 1 "$nr"; do
			[ "$rails" = 1 ] && devs=$first || devs=$all
			log=$OUT/pcbench-$s-$rails.log
			PC_VERBS_DEVICE=$devs timeout 300 "$BIN_BENCH" --topology "$OUT/topology.yaml" \
				--page-size "$s" --batch 64 --keys $keys --iters "$ITERS" \
				--ops set,get,exists --no-raw-tcp --prefix "v$s-$rails" > "$log" 2>&1
			rc=$?
			vr=$(awk '/^verify:/ { print ($2 == "FAIL") ? "FAIL" : ($2 == "no") ? "none" : "ok" }' "$log")
			bounce=$(sed -n 's/.*bounce_copies=\([0-9]*\).*/\1/p' "$log")
			rb=$(sed -n 's/.*rail_bytes=\([0-9,]*\).*/\1/p' "$log" | sed 's/\(,0\)*$//')
			for op in set get exists; do
				l=$(awk -v op="$op" '$1 == op && NF >= 8 { print $4, $3, $5; exit }' "$log")
				[ -n "$l" ] || continue
				set -- $l
				row pcbench "$rails" "$op" "$n" "$1" "$2" "$3" "${vr:-none}" "${bounce:-?}" "${rb:-?}" >> "$RES"
			done
			say "pcbench $s on $rails rail(s): $(awk '$1 == "get" { printf "get %s GB/s", $4 } $1 == "set" { printf "set %s GB/s, ", $4 }' "$log"); verify ${vr:-none}, bounce copies ${bounce:-?}, rail bytes ${rb:-?}"
			[ $rc = 0 ] && [ "$vr" = ok ] || bad "pcbench $s on $rails rail(s) (see $log)"
		done
	done
}

# ------------------------------------------------------------------ 4. torture
run_torture() {
	proto=rdma
	for d in $DEVICES; do [ -e "/sys/class/infiniband/$d/parent" ] && proto=rxe; done
	if [ ! -x "$BIN_TORTURE" ]; then
		say "torture: $BIN_TORTURE is missing (build the tests); skipped"
		row torture 0 0 0 skipped >> "$RES"
		return
	fi
	timeout 900 "$BIN_TORTURE" "$BIN_PCD" "$TREADS" chaos "$proto" > "$OUT/torture.log" 2>&1
	rc=$?
	l=$(sed -n 's/.*torture over [a-z]*: \([0-9]*\) reads.*: \([0-9]*\) hits, .* \([0-9]*\) DIRTY.*/\1 \2 \3/p' "$OUT/torture.log")
	set -- ${l:-0 0 -}
	v=ok; [ $rc = 0 ] && [ "$3" = 0 ] || v=FAIL
	row torture "$1" "$2" "$3" "$v" >> "$RES"
	say "torture over $proto: $1 reads, $2 hits, $3 dirty: $v"
	[ "$v" = ok ] || { grep -A40 -m1 "ERROR: AddressSanitizer" "$OUT/torture.log" || tail -15 "$OUT/torture.log"; bad "torture (see $OUT/torture.log)"; }
}

# ------------------------------------------------------------------ report
report() {
	[ -s "$RES" ] || { echo "roce-validate: $RES is missing or empty; run first" >&2; exit 2; }
	md=$OUT/report.md
	awk -F'\t' -v title="$TITLE" -v out="$OUT" '
	$1 == "meta" { meta[$2] = $3 }
	$1 == "check" { checks[++nc] = "| " $2 " | " $3 " | " $4 " | " $5 " | " $6 " |"; if ($6 == "FAIL") cfail++ }
	$1 == "perftest" && $2 != "ib_read_lat" {
		bw[$2, $3, $4] = $5; sizes[$4] = 1
		if (!($3 in devseen)) { devseen[$3] = 1; devs[++nd] = $3 }
	}
	$1 == "perftest" && $2 == "ib_read_lat" { lat[$3] = $6; latn[$3] = $4 }
	$1 == "pcbench" { pb[$2, $3, $4] = $5; prate[$2, $3, $4] = $6; p50[$2, $3, $4] = $7
		ver[$2, $4] = $8; bnc[$2, $4] = $9; rb[$2, $4] = $10; rails[$2] = 1; sizes[$4] = 1 }
	$1 == "torture" { tor = "| " $2 " | " $3 " | " $4 " | " $5 " |" }
	function ref(tool, r, n,   s, i) {	# one rail: the first device; all: the sum
		if (r == 1) return bw[tool, devs[1], n]
		s = 0; for (i = 1; i <= nd; i++) s += bw[tool, devs[i], n]; return s
	}
	function kib(n) { return (n % 1048576 == 0) ? n / 1048576 " MiB" : n / 1024 " KiB" }
	END {
		ns = 0; for (n in sizes) sz[++ns] = n + 0
		for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sz[j] < sz[i]) { t = sz[i]; sz[i] = sz[j]; sz[j] = t }
		nr = 0; for (r in rails) rl[++nr] = r + 0
		if (nr == 2 && rl[1] > rl[2]) { t = rl[1]; rl[1] = rl[2]; rl[2] = t }
		print "# " title "\n"
		print "Run " meta["date"] " on " meta["client"] " (client) and " meta["server"] " (server), peercache " meta["commit"] "; devices: " meta["devices"] ".\n"
		print "## Checks\n\n| host | device | check | value | verdict |\n|---|---|---|---|---|"
		for (i = 1; i <= nc; i++) print checks[i]
		print "\n## perftest, per rail (GB/s = 10^9 bytes/s)\n\n| device | size | ib_read_bw | ib_write_bw |\n|---|---|---|---|"
		for (d = 1; d <= nd; d++) for (i = 1; i <= ns; i++)
			printf "| %s | %s | %s | %s |\n", devs[d], kib(sz[i]), bw["ib_read_bw", devs[d], sz[i]], bw["ib_write_bw", devs[d], sz[i]]
		for (d = 1; d <= nd; d++) if (devs[d] in lat)
			printf "\nib_read_lat on %s at %s: typical %s us", devs[d], kib(latn[devs[d]]), lat[devs[d]]
		print "\n\n## peercache over verbs against perftest\n"
		print "64-page batches, every page verified. Reference for all rails: the sum of the per-rail perftest runs. Targets: get >= 0.9x ib_read_bw, set >= 0.9x ib_write_bw.\n"
		print "| rails | size | get GB/s | / ib_read_bw | set GB/s | / ib_write_bw | exists keys/s | get p50 us/batch | verified | bounce copies | bytes per rail |"
		print "|---|---|---|---|---|---|---|---|---|---|---|"
		for (k = 1; k <= nr; k++) for (i = 1; i <= ns; i++) {
			r = rl[k]; n = sz[i]; rr = ref("ib_read_bw", r, n); rw = ref("ib_write_bw", r, n)
			gr = rr > 0 ? pb[r, "get", n] / rr : 0; sr = rw > 0 ? pb[r, "set", n] / rw : 0
			printf "| %d | %s | %s | %.2f%s | %s | %.2f%s | %s | %s | %s | %s | %s |\n", r, kib(n),
				pb[r, "get", n], gr, (gr + 1e-9 >= 0.9) ? "" : " (below)", pb[r, "set", n], sr, (sr + 1e-9 >= 0.9) ? "" : " (below)",
				prate[r, "exists", n], p50[r, "get", n], ver[r, n], bnc[r, n], rb[r, n]
			printf "%d %d %s %s %s %s %.3f %.3f\n", r, n / 1024, rr, rw, pb[r, "get", n], pb[r, "set", n], gr, sr > (out "/plot.dat")
		}
		print "\n![bandwidth](bandwidth.png) ![ratio](ratio.png)\n"
		print "## Torture over verbs (this host)\n\n| reads | hits | dirty hits | verdict |\n|---|---|---|---|"
		print tor
	}' "$RES" > "$md" || exit 1
	if command -v gnuplot >/dev/null; then
		gnuplot <<EOF || { echo "roce-validate: gnuplot failed" >&2; exit 1; }
set terminal png size 900,500 noenhanced
set datafile separator " "
set logscale x 2
set xlabel "page size (KiB)"
set key left top
set output "$OUT/bandwidth.png"
set ylabel "GB/s"
set title "peercache over verbs and perftest, by page size"
plot "$OUT/plot.dat" using 2:(\$1==1?\$3:1/0) with linespoints title "ib_read_bw, 1 rail", \
     "" using 2:(\$1==1?\$5:1/0) with linespoints title "get, 1 rail", \
     "" using 2:(\$1==1?\$4:1/0) with linespoints title "ib_write_bw, 1 rail", \
     "" using 2:(\$1==1?\$6:1/0) with linespoints title "set, 1 rail", \
     "" using 2:(\$1>1?\$3:1/0) with linespoints title "ib_read_bw, all rails", \
     "" using 2:(\$1>1?\$5:1/0) with linespoints title "get, all rails"
set output "$OUT/ratio.png"
set ylabel "ratio to perftest"
set yrange [0:*]
set title "get / ib_read_bw and set / ib_write_bw (target 0.9)"
plot "$OUT/plot.dat" using 2:(\$1==1?\$7:1/0) with linespoints title "get, 1 rail", \
     "" using 2:(\$1==1?\$8:1/0) with linespoints title "set, 1 rail", \
     "" using 2:(\$1>1?\$7:1/0) with linespoints title "get, all rails", \
     "" using 2:(\$1>1?\$8:1/0) with linespoints title "set, all rails", \
     0.9 with lines dashtype 2 title "target"
EOF
	else
		echo "roce-validate: gnuplot not found: $md written without its plots" >&2
	fi
	say "report in $md"
}

case "$CMD" in
run)
	[ -n "$DEVICES" ] || { echo "roce-validate: --devices D0[,D1...] is required" >&2; usage; }
	[ "$LOCAL" = 1 ] || [ -n "$SERVER" ] || { echo "roce-validate: --local or --server HOST" >&2; usage; }
	: > "$RES"
	cl=$(uname -n)
	sv=$(srv 'uname -n')
	commit=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
	row meta date "$(date -u '+%Y-%m-%d %H:%M UTC')" >> "$RES"
	row meta client "$cl $(uname -r)" >> "$RES"
	row meta server "$sv" >> "$RES"
	row meta commit "$commit" >> "$RES"
	row meta devices "$DEVICES" >> "$RES"
	for h in $HOSTS; do check_host "$h"; done
	[ $FAILS = 0 ] || { say "FAIL: $FAILS check(s) failed; fix them first"; exit 1; }
	run_perftest
	start_pcd
	run_pcbench
	stop_pcd
	run_torture
	if [ $FAILS = 0 ]; then say "PASS; results in $RES"; else say "FAIL: $FAILS failure(s); results in $RES"; fi
	[ $FAILS = 0 ]
	;;
report) report ;;
*) usage ;;
esac
