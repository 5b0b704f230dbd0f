#!/bin/bash
# rxe-vm.sh - run peercache's verbs tests on Soft-RoCE (rdma_rxe) inside a throw-away
# QEMU VM, for hosts whose kernel has no RDMA (this CI). Builds an initramfs with
# Debian 12's stock kernel modules, rdma-core's userland, perftest and the project's
# own binaries (with the libraries they load), boots it under TCG, creates rxe0 on
# lo, and runs:
#   1. tcp_test rxe        the fabric conformance suite on the rxe backend
#   2. e2e_test pcd rxe    the e2e suite across processes over rxe, in slotmap and
#                          in p2p mode, and
#      tier_e2e_test         the tiered pool's smoke runs over rxe
#   3. ib_read_bw and ib_write_bw (bandwidth; one READ in flight) next to pcbench
#      over rxe, with its get and set as ratios to them, and what a page cost each
#      (the VM's CPU time and rxe0's packets: rdma_rxe works per packet in software)
#   4. pcdemo: three node processes over rxe, in slotmap and in p2p mode
#   5. torture_test over rxe: writers and verifying readers, peers stopped and killed
#   6. verbs_test on two rails (rxe1 and rxe2 on two dummy netdevs), and again as
#      verbs_leak_test under AddressSanitizer (no verbs object leaked); then a node
#      and a client that name no device, among the three, against each other
#   7. ci/roce-validate.sh, the cluster validation kit, against those two rails;
#      its results come back over the console and become the report in
#      BUILD/rxe-vm/validate (report.md and PNGs)
#   8. the Python package (SGLang's storage backend) over rxe0: its registered host
#      pool moved by the NIC without a bounce copy (tests/python/test_rdma.py). The
#      VM mounts this host's root read-only over 9p and runs the host's python3 and
#      torch in a chroot of it (nothing is copied into the initramfs)
# It prints one line RXE: PASS or RXE: FAIL and exits 0, 1 (test failure), 2
# (setup: no download, VM did not report) or 77 (skipped: no qemu and not root).
# The VM's CPU is QEMU's plain qemu64: under TCG it runs rdma_rxe and our code about
# twice as fast as -cpu max, whose AVX-512 is emulated.
#
#   ci/rxe-vm.sh [BUILD_DIR]   env: PC_RXE_CACHE (downloads), VM_TIMEOUT, VM_MEM, VM_CPU,
#                              PC_TORTURE_READS (default 100000; 1000000 for the long run),
#                              PC_RXE_STEPS (e.g. 6,7: only those steps; all by default),
#                              PC_RXE_PYTHON (step 8's interpreter; default /usr/bin/python3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
CACHE=${PC_RXE_CACHE:-/var/tmp/peercache-rxe-vm}
VM_TIMEOUT=${VM_TIMEOUT:-720}
VM_MEM=${VM_MEM:-1536}
T0=$(date +%s)
log() { echo "[rxe-vm $(( $(date +%s) - T0 ))s] $*"; }
setup_fail() { log "setup error: $*"; echo "RXE: FAIL (setup)"; exit 2; }

for b in tests/tcp_test tests/e2e_test tests/tier_e2e_test tests/torture_test tests/verbs_test \
	tests/verbs_leak_test tools/pcd tools/pcbench tools/pcdemo; do
	[ -x "$BUILD/$b" ] || setup_fail "$BUILD/$b is missing: build first (cmake --build $BUILD)"
done
export DEBIAN_FRONTEND=noninteractive
if ! command -v qemu-system-x86_64 >/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		echo "RXE: SKIP: qemu-system-x86_64 is missing and installing it needs root"
		exit 77
	fi
	log "installing qemu-system-x86"
	apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null \
		|| setup_fail "cannot install qemu-system-x86"
fi

# ---------------------------------------------------------------- downloads (cached)
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
[ -n "$KPKG" ] || { apt-get update -qq; KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); }
[ -n "$KPKG" ] || setup_fail "cannot resolve linux-image-amd64"
KVER=${KPKG#linux-image-}
PKGS="busybox-static perftest iproute2 libmnl0 libbsd0 libmd0 libcap2 libelf1 libbpf1 libxtables12
      libpci3 libudev1 zlib1g"
mkdir -p "$CACHE/debs"
if [ ! -f "$CACHE/debs/.done-$KVER" ]; then
	log "downloading $KPKG and the VM's userland into $CACHE"
	( cd "$CACHE/debs" && rm -f ./*.deb && apt-get download -qq -o APT::Sandbox::User=root "$KPKG" $PKGS ) \
		|| { apt-get update -qq; ( cd "$CACHE/debs" && apt-get download -qq -o APT::Sandbox::User=root "$KPKG" $PKGS ); } \
		|| setup_fail "apt-get download failed"
	rm -rf "$CACHE/kernel" "$CACHE/user"
	mkdir -p "$CACHE/kernel" "$CACHE/user"
	dpkg -x "$CACHE"/debs/"$KPKG"_*.deb "$CACHE/kernel"
	for d in "$CACHE"/debs/*.deb; do
		case "$d" in */linux-image-*) continue ;; esac
		dpkg -x "$d" "$CACHE/user"
	done
	touch "$CACHE/debs/.done-$KVER"
fi
BB="$CACHE/user/bin/busybox"
VMLINUZ="$CACHE/kernel/boot/vmlinuz-$KVER"
MODDIR="$CACHE/kernel/lib/modules/$KVER"
[ -x "$BB" ] && [ -f "$VMLINUZ" ] && [ -d "$MODDIR" ] || setup_fail "unpacked packages are incomplete"
[ -f "$MODDIR/modules.dep" ] || "$BB" depmod -b "$CACHE/kernel" "$KVER" || setup_fail "depmod failed"

# rdma_rxe and what it needs, dependencies first; crc32_generic is loaded by name at
# run time (crypto_alloc_shash("crc32")), so modules.dep does not list it.
modorder() {
	for m in "$@"; do
		line=$(grep -E "(^|/)${m}\.ko(\.xz)?:" "$MODDIR/modules.dep") || { echo "no module $m" >&2; return 1; }
		echo "${line#*:}" | tr ' ' '\n' | grep . | tac
		echo "${line%%:*}"
	done | awk '!seen[$0]++'
}
MODS=$(modorder crc32_generic rdma_rxe dummy virtio_pci 9pnet_virtio 9p) \
	|| setup_fail "cannot resolve the modules of rdma_rxe and 9p"

# ---------------------------------------------------------------- initramfs
STAGE="$BUILD/rxe-vm/stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,etc,proc,sys,dev,tmp,run,pc,lib64,usr/lib/x86_64-linux-gnu}
cp "$BB" "$STAGE/bin/busybox"
for a in $("$BB" --list); do [ -e "$STAGE/bin/$a" ] || ln -s busybox "$STAGE/bin/$a"; done
# rdma (iproute2) and perftest from the downloads, with their libraries
for f in usr/bin/rdma sbin/rdma usr/bin/ib_read_lat usr/bin/ib_read_bw usr/bin/ib_write_bw usr/bin/ib_write_lat; do
	[ -e "$CACHE/user/$f" ] && cp "$CACHE/user/$f" "$STAGE/bin/" || true
done
for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
	[ -d "$CACHE/user/$d" ] && cp -a "$CACHE/user/$d"/lib*.so* "$STAGE/usr/lib/x86_64-linux-gnu/" 2>/dev/null || true
done
# the project's binaries and every library the host resolves for them (rdma-core,
# yaml, xxhash, cunit, libc), plus the verbs provider for rxe
BINS="$BUILD/tests/tcp_test $BUILD/tests/e2e_test $BUILD/tests/tier_e2e_test $BUILD/tests/torture_test
      $BUILD/tests/verbs_test $BUILD/tests/verbs_leak_test $BUILD/tools/pcd $BUILD/tools/pcbench $BUILD/tools/pcdemo"
cp $BINS "$STAGE/pc/"
cp ci/roce-validate.sh "$STAGE/pc/"
cp /usr/bin/ibv_devinfo "$STAGE/pc/" || setup_fail "ibv_devinfo is missing (ibverbs-utils)"
for lib in $( (ldd $BINS "$STAGE"/bin/ib_read_bw "$STAGE"/bin/rdma 2>/dev/null; \
	       ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so) \
	      | grep -oE '/[^ ]+\.so[^ ]*' | sort -u); do
	[ -e "$lib" ] || continue
	mkdir -p "$STAGE$(dirname "$lib")"
	cp -L "$lib" "$STAGE$lib"
done
mkdir -p "$STAGE/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$STAGE/etc/libibverbs.d/" || setup_fail "rdma-core's rxe.driver is missing (ibverbs-providers)"
[ -e "$STAGE/lib64/ld-linux-x86-64.so.2" ] || cp -L /lib64/ld-linux-x86-64.so.2 "$STAGE/lib64/"
for m in $MODS; do
	mkdir -p "$STAGE/lib/modules/$KVER/$(dirname "$m")"
	cp "$MODDIR/$m" "$STAGE/lib/modules/$KVER/$m"
	echo "/lib/modules/$KVER/$m" >> "$STAGE/modules.list"
done
cp ci/rxe-vm-init.sh "$STAGE/init"
chmod +x "$STAGE/init"
log "building the initramfs"
( cd "$STAGE" && find . | "$BB" cpio -o -H newc 2>/dev/null | gzip -1 > "$BUILD/rxe-vm/initrd.gz" ) \
	|| setup_fail "cpio failed"

# ---------------------------------------------------------------- boot
# step 8 runs this host's interpreter (one that imports torch, as SGLang's pools are
# torch tensors) on this host's files, shared read-only over 9p
PY=${PC_RXE_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import torch' 2>/dev/null; then
	SHARE="-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	PYARGS="pc_python=$PY pc_src=$(pwd) pc_build=$BUILD"
else
	log "step 8 (the Python package over rxe) will be skipped: $PY cannot import torch (ci/install-deps.sh installs python3-torch; PC_RXE_PYTHON names another)"
	SHARE="" PYARGS=""
fi
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL="-accel kvm -cpu host"; else ACCEL="-accel tcg -cpu ${VM_CPU:-qemu64}"; fi
LOG="$BUILD/rxe-vm/vm.log"
log "booting ($ACCEL, ${VM_MEM} MiB, 2 vCPUs, timeout ${VM_TIMEOUT}s); log in $LOG"
set +e
timeout "$VM_TIMEOUT" qemu-system-x86_64 $ACCEL -m "$VM_MEM" -smp 2 -nodefaults -no-user-config \
	-display none -serial stdio -no-reboot -kernel "$VMLINUZ" -initrd "$BUILD/rxe-vm/initrd.gz" $SHARE \
	-append "console=ttyS0 panic=-1 loglevel=3 pc_torture_reads=${PC_TORTURE_READS:-100000} pc_rxe_steps=${PC_RXE_STEPS:-} $PYARGS" \
	</dev/null 2>&1 | tr -d '\r' | tee "$LOG"
QRC=${PIPESTATUS[0]}
set -e
log "VM exited ($QRC) after $(( $(date +%s) - T0 ))s in all"
# the kit's results, as the VM printed them, into its report
if grep -q '^PC_VALIDATE_END' "$LOG"; then
	mkdir -p "$BUILD/rxe-vm/validate"
	{ sed -n '/^PC_VALIDATE_BEGIN/,/^PC_VALIDATE_END/p' "$LOG" | sed '1d;$d'
	  printf 'meta\tcommit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; } \
		> "$BUILD/rxe-vm/validate/results.tsv"
	sh ci/roce-validate.sh report --out "$BUILD/rxe-vm/validate" \
		--title "rxe VM smoke run (Soft-RoCE under QEMU TCG: not a hardware figure)" \
		|| { echo "RXE: FAIL (the kit's report)"; exit 1; }
fi
if grep -q '^RXE_VM_RESULT=PASS' "$LOG"; then
	echo "RXE: PASS"
	exit 0
elif grep -q '^RXE_VM_RESULT=FAIL' "$LOG"; then
	echo "RXE: FAIL ($(grep '^RXE_VM_RESULT=FAIL' "$LOG" | head -1 | cut -d' ' -f2-))"
	exit 1
fi
echo "RXE: FAIL (the VM did not report; qemu exit $QRC)"
exit 2
