#!/bin/sh
# install_test.sh BUILD SRC - the installed package, as a user gets it:
#   - cmake --install into a temporary prefix: every tool, man page, plot script,
#     topology, peercache.pc, the CMake package and the systemd unit are there, and
#     the installed pcsim and pcsimbench find their data next to themselves;
#   - peercache.pc hands consumers no -I but the prefix's (dependencies are private);
#   - examples/hello.c builds with pkg-config (shared), against libpeercache.a with
#     xxhash, yaml and libcrypto from their archives (-Wl,-Bstatic; libmicrohttpd,
#     libcurl and jansson stay shared: Debian ships gnutls's p11-kit without an
#     archive), fully -static against a libpeercache built without those two
#     (-DPC_ETCD=OFF -DPC_METRICS_HTTP=OFF), and with CMake find_package
#     (peercache::peercache and peercache::peercache_static);
#   - each of those clients runs against a 3-node cluster of the installed pcd on
#     ports the system picked, and the installed pcdemo passes.
set -u
B=$(cd "$1" && pwd)
S=$(cd "$2" && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp -d /tmp/pc-install.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
P=$T/prefix

cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1 || { bad "cmake --install"; cat "$T/install.log"; }
for f in bin/pcd bin/pcctl bin/pctopo bin/pcdemo bin/pcbench bin/pctierbench bin/pcsim bin/pcsimbench bin/pccalibrate \
	 share/man/man1/pcd.1 share/man/man1/pcsim.1 share/man/man1/pcsimbench.1 share/man/man1/pccalibrate.1 \
	 share/peercache/plots/hitrate.gp share/peercache/plots/timeseries.gp \
	 share/peercache/plots/latency_cdf.gp share/peercache/topologies/laptop.yaml \
	 share/peercache/topologies/rack.yaml lib/pkgconfig/peercache.pc \
	 lib/cmake/peercache/peercacheConfig.cmake lib/libpeercache.a include/peercache/peercache.h \
	 lib/systemd/system/peercache@.service; do
	[ -e "$P/$f" ] || bad "not installed: $f"
done
[ $fail = 0 ] && ok "every tool, man page, plot script, topology and package file installed"
grep -q "^ExecStart=$P/bin/pcd " "$P/lib/systemd/system/peercache@.service" &&
	ok "the unit starts this prefix's pcd" || bad "the unit's ExecStart"
if grep -q "$S/sim/plots\|$S/topologies" "$P/bin/pcsim" "$P/bin/pcsimbench"; then
	bad "pcsim or pcsimbench has a source path ($S/sim/plots or topologies) baked in"
else
	ok "no source path in the installed pcsim and pcsimbench"
fi

# the installed simulator, run from elsewhere: plots and topologies next to the binary
mkdir "$T/elsewhere"
(cd "$T/elsewhere" && "$P/bin/pcsim" --topology "$P/share/peercache/topologies/rack.yaml" \
	--workload zipf:keys=2000,requests=300 --mode hitrate --out "$T/sim" >"$T/sim.log" 2>&1)
[ -s "$T/sim/hitrate.png" ] && ok "installed pcsim draws its plots" ||
	{ bad "installed pcsim: no hitrate.png"; cat "$T/sim.log" "$T/sim/plots.log" 2>/dev/null; }
(cd "$T/elsewhere" && "$P/bin/pcsimbench" --runs 1 --workload zipf:keys=2000,requests=300 \
	>"$T/simbench.log" 2>&1) && ok "installed pcsimbench finds rack.yaml" ||
	{ bad "installed pcsimbench"; cat "$T/simbench.log"; }

# pkg-config
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
cflags=$(pkg-config --cflags peercache)
case "$cflags" in
*-I*-I*|*libnl*) bad "pkg-config --cflags leaks dependencies' flags: $cflags" ;;
*) ok "pkg-config --cflags: $cflags" ;;
esac
cc -o "$T/hello-pc" "$S/examples/hello.c" $cflags $(pkg-config --libs peercache) \
	-Wl,-rpath,"$P/lib" && ok "hello built with pkg-config" || bad "hello with pkg-config"
# libmicrohttpd, libcurl and jansson (and libibverbs, when built in) shared, with
# libc's (libcurl's archive needs a dozen more, some without archives in Debian)
shared="-lmicrohttpd -lcurl -ljansson -ldl -lpthread -lm"
pkg-config --static --libs peercache | grep -q -- -libverbs && shared="$shared -libverbs"
cc -o "$T/hello-static" "$S/examples/hello.c" $cflags -L"$P/lib" -Wl,-Bstatic -lpeercache -lxxhash \
	-lyaml -lcrypto -Wl,-Bdynamic $shared && ok "hello linked against the static archives" ||
	bad "hello against libpeercache.a"
if [ -x "$T/hello-static" ] && ldd "$T/hello-static" | grep -q "libpeercache\|libxxhash\|libyaml"; then
	bad "hello-static still loads a shared peercache, xxhash or yaml"
fi

# A fully -static program: the library built without what pulls in gnutls (the etcd
# backend's libcurl, the metrics endpoint's libmicrohttpd: gnutls needs p11-kit,
# which Debian 12 ships without an archive) and without verbs (its providers are
# loaded at run time)
cmake -S "$S" -B "$T/min" -DPC_ETCD=OFF -DPC_METRICS_HTTP=OFF -DPC_BACKEND_VERBS=OFF \
	-DPC_BACKEND_SIM=OFF -DPC_BUILD_TESTS=OFF >"$T/min.log" 2>&1 &&
	cmake --build "$T/min" --target peercache_static -j2 >>"$T/min.log" 2>&1 &&
	cc -static -o "$T/hello-fullstatic" "$S/examples/hello.c" $cflags -I"$T/min/include" \
		"$T/min/libpeercache.a" -lxxhash -lyaml -lcrypto -lpthread -lm >>"$T/min.log" 2>&1 &&
	ldd "$T/hello-fullstatic" 2>&1 | grep -q "not a dynamic executable" &&
	ok "hello linked -static (libpeercache without etcd and the metrics endpoint)" ||
	{ bad "hello -static"; tail -20 "$T/min.log"; }
# that library says it has no endpoint, rather than pretending to serve one
cat >"$T/nometrics.c" <<'C'
#include <errno.h>
#include <peercache/peercache.h>
int main(void)
{
	struct pc_metrics_server *m = (void *)1;

	return pc_metrics_serve(NULL, NULL, 0, &m) == -ENOTSUP && !m ? 0 : 1;
}
C
cc -static -o "$T/nometrics" "$T/nometrics.c" $cflags -I"$T/min/include" "$T/min/libpeercache.a" \
	-lxxhash -lyaml -lcrypto -lpthread -lm >>"$T/min.log" 2>&1 && "$T/nometrics" 2>/dev/null &&
	ok "without the endpoint, pc_metrics_serve is -ENOTSUP" || bad "pc_metrics_serve without the endpoint"

# CMake
cmake -S "$S/examples" -B "$T/ex" -DCMAKE_PREFIX_PATH="$P" >"$T/cmake.log" 2>&1 &&
	cmake --build "$T/ex" >>"$T/cmake.log" 2>&1 && [ -x "$T/ex/hello_static" ] &&
	ok "examples built with find_package(peercache): hello, hello_static" ||
	{ bad "examples with CMake"; tail -20 "$T/cmake.log"; }

# a cluster of the installed pcd on ports the system picks
PORTS=$(python3 -c 'import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $PORTS
cat >"$T/cluster.yaml" <<YAML
name: install-test
store: {slot_size_classes: [16KiB], global_segment_size: 8MiB, heartbeat_ms: 100}
node_defaults: {address: 127.0.0.1}
nodes:
  - {name: n0, port: $1}
  - {name: n1, port: $2}
  - {name: n2, port: $3}
YAML
for n in n0 n1 n2; do
	timeout 120 "$P/bin/pcd" --topology "$T/cluster.yaml" --node $n >"$T/pcd-$n.log" 2>&1 &
	PIDS="$PIDS $!"
done
for n in n0 n1 n2; do
	i=0
	until grep -q "ready" "$T/pcd-$n.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 100 ] && { bad "pcd $n did not start"; cat "$T/pcd-$n.log"; break; }
		sleep 0.1
	done
done
for h in hello-pc hello-static hello-fullstatic ex/hello ex/hello_static; do
	[ -x "$T/$h" ] || continue
	if timeout 30 "$T/$h" "$T/cluster.yaml" >"$T/$h.out" 2>&1 && grep -q "0 not byte-identical" "$T/$h.out"; then
		ok "$h against the installed pcd cluster: $(tail -1 "$T/$h.out")"
	else
		bad "$h against the cluster"; cat "$T/$h.out"
	fi
done
timeout 60 "$P/bin/pcdemo" --topology "$P/share/peercache/topologies/laptop.yaml" --free-ports \
	>"$T/demo.log" 2>&1 && ok "installed pcdemo: $(tail -1 "$T/demo.log")" ||
	{ bad "installed pcdemo"; cat "$T/demo.log"; }

echo "install: $pass passed, $fail failed"
[ $fail = 0 ]
