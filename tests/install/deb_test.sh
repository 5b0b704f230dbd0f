#!/bin/sh
# deb_test.sh DEB - the Debian package as built by cpack -G DEB (ci/test.sh builds it
# from a build configured with -DCMAKE_INSTALL_PREFIX=/usr): its dependencies are
# runtime packages only, its files sit where Debian looks for them, and, unpacked
# (dpkg -x, so this machine's /usr is left alone), its pcdemo passes, its pcsim finds
# its plot scripts and its Python package imports and finds its library. As root, on
# a machine where no peercache package is installed (a fresh CI machine), it is then
# installed for real (apt-get install ./DEB: dependencies resolved, postinst run), its
# pcdemo, pkg-config file and Python package are used from /usr, and it is purged;
# PC_DEB_INSTALL=0 skips that part.
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
dpkg-deb -I "$DEB" postrm >/dev/null 2>&1 && ok "has a postrm (purge)" || bad "no postrm"
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

# ---------------------------------------------------------------- a real install
if [ "$(id -u)" != 0 ] || [ "${PC_DEB_INSTALL:-1}" = 0 ]; then
	echo "skipped: installing the package for real (needs root; PC_DEB_INSTALL=0 skips it)"
elif dpkg -s peercache >/dev/null 2>&1 || [ -e /usr/bin/pcd ]; then
	echo "skipped: installing the package for real (peercache is installed on this machine already)"
else
	case $DEB in /*) abs=$DEB ;; *) abs=$PWD/$DEB ;; esac
	trap 'apt-get purge -y peercache >/dev/null 2>&1; rm -rf "$T"' EXIT
	if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$abs" \
		>"$T/apt.log" 2>&1; then
		ok "apt-get install ./$(basename "$DEB")"
		getent passwd peercache >/dev/null && ok "postinst made the peercache user" ||
			bad "no peercache user after install"
		[ -f /etc/peercache/cluster.yaml.example ] && [ -f /etc/default/peercache ] &&
			ok "postinst put /etc/peercache/cluster.yaml.example and /etc/default/peercache" ||
			bad "postinst's /etc files"
		(cd "$T" && timeout 60 pcdemo --topology /usr/share/peercache/topologies/laptop.yaml \
			--free-ports >"$T/demo2.log" 2>&1) && ok "installed pcdemo: $(tail -1 "$T/demo2.log")" ||
			{ bad "installed pcdemo"; cat "$T/demo2.log"; }
		v=$(pkg-config --modversion peercache 2>&1) && ok "pkg-config finds peercache $v" ||
			bad "pkg-config: $v"
		lib=$(cd "$T" && env -u PEERCACHE_LIB -u PYTHONPATH /usr/bin/python3 -c \
			'import peercache._lib as L; print(L.library_path())' 2>&1)
		case "$lib" in
		/usr/lib/*libpeercache.so*) ok "Debian's python3 imports peercache: $lib" ;;
		*) bad "import peercache after install: $lib" ;;
		esac
		if apt-get purge -y peercache >"$T/purge.log" 2>&1 && ! dpkg -s peercache >/dev/null 2>&1 &&
			[ ! -e /usr/bin/pcd ] && [ ! -e /usr/include/peercache/peercache.h ] &&
			[ ! -e /etc/default/peercache ] && [ ! -e /etc/peercache ]; then
			ok "apt-get purge peercache leaves none of its files (the peercache user stays)"
		else
			bad "purge"; cat "$T/purge.log"
		fi
	else
		bad "apt-get install ./$(basename "$DEB")"; cat "$T/apt.log"
	fi
fi
echo "deb: $pass passed, $fail failed"
[ $fail = 0 ]
