#!/bin/sh
# deb_test.sh DEB - the Debian package as built by cpack -G DEB (ci/test.sh builds it
# from a build configured with -DCMAKE_INSTALL_PREFIX=/usr): its dependencies are
# runtime packages only, its files sit where Debian looks for them, and, unpacked
# (dpkg -x, so this machine's /usr is left alone), its pcdemo passes, its pcsim finds
# its plot scripts and its Python package imports and finds its library.
set -u
DEB=$1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp -d /tmp/pc-deb.XXXXXX)
trap 'rm -rf "$T"' EXIT

deps=$(dpkg-deb -f "$DEB" Depends)
case "$deps" in
*-dev*|"") bad "Depends: '$deps'" ;;
*) ok "Depends: $deps" ;;
esac
dpkg-deb -c "$DEB" | awk '{print $6}' >"$T/files"
for f in ./usr/bin/pcd ./usr/bin/pcsim ./usr/share/man/man1/pcd.1 \
	 ./usr/lib/python3/dist-packages/peercache/store.py ./usr/lib/systemd/system/peercache@.service \
	 ./usr/share/peercache/plots/hitrate.gp ./usr/include/peercache/peercache.h; do
	grep -qx "$f" "$T/files" || bad "not in the package: $f"
done
dpkg-deb -I "$DEB" postinst >/dev/null 2>&1 && ok "has a postinst (the peercache user)" || bad "no postinst"
dpkg-deb -x "$DEB" "$T/root" || bad "dpkg -x"
R=$T/root
grep -q "^ExecStart=/usr/bin/pcd " "$R/usr/lib/systemd/system/peercache@.service" &&
	ok "the unit starts /usr/bin/pcd" || bad "the unit's ExecStart"
grep -q "prefix=\${pcfiledir}/../../.." "$R"/usr/lib/*/pkgconfig/peercache.pc &&
	ok "peercache.pc finds /usr from lib/<triplet>/pkgconfig" || bad "peercache.pc's prefix"
timeout 60 "$R/usr/bin/pcdemo" --topology "$R/usr/share/peercache/topologies/laptop.yaml" \
	--free-ports >"$T/demo.log" 2>&1 && ok "the package's pcdemo: $(tail -1 "$T/demo.log")" ||
	{ bad "the package's pcdemo"; cat "$T/demo.log"; }
(cd "$T" && "$R/usr/bin/pcsim" --topology "$R/usr/share/peercache/topologies/rack.yaml" \
	--workload zipf:keys=2000,requests=300 --mode hitrate --out "$T/sim" >"$T/sim.log" 2>&1)
[ -s "$T/sim/hitrate.png" ] && ok "the package's pcsim draws its plots" ||
	{ bad "the package's pcsim"; cat "$T/sim.log"; }
if command -v python3 >/dev/null; then
	lib=$(cd "$T" && env -u PEERCACHE_LIB PYTHONPATH="$R/usr/lib/python3/dist-packages" python3 -c \
		'import peercache._lib as L; print(L.library_path()); print(L.version())' 2>&1)
	case "$lib" in
	"$R"/usr/lib/*libpeercache.so*) ok "the package's Python module loads its library: $(echo $lib | tr '\n' ' ')" ;;
	*) bad "the Python package: $lib" ;;
	esac
fi
echo "deb: $pass passed, $fail failed"
[ $fail = 0 ]
