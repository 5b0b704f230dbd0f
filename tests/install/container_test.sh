#!/bin/sh
# container_test.sh DEB PCBENCH - dist/Containerfile as docs/deployment.md uses it: the
# image is built from the .deb, two containers run pcd nodes of one cluster (host
# network, the topology and cluster secret mounted at /etc/peercache, as the peercache
# user the image runs as), and PCBENCH, a client on the host, writes pages through
# them and reads every one back.
#
# With podman (ci/install-deps.sh installs it, runc and debootstrap). The base image
# debian:12-slim is used when podman has it; else, as this machine reaches Debian's
# archive and no other registry, one is made with debootstrap --variant=minbase and
# podman import. Needs root; PC_CONTAINER_TEST=0 skips it.
set -u
DEB=$1
PCBENCH=$2
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

if [ "$(id -u)" != 0 ] || [ "${PC_CONTAINER_TEST:-1}" = 0 ]; then
	echo "container: skipped (needs root; PC_CONTAINER_TEST=0 skips it)"
	exit 0
fi
if ! command -v podman >/dev/null; then
	echo "container: FAIL: no podman (ci/install-deps.sh installs it)"
	exit 1
fi
# This machine's cgroups are v1 with a v2 hierarchy beside them ("hybrid"), which
# crun refuses: runc with podman's own cgroupfs manager runs there.
POD="podman --runtime runc --cgroup-manager=cgroupfs"
# limits at or below this machine's hard ones (runc may not raise them)
RUN="$POD run --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096"
IMG=localhost/peercache-test:$$
T=$(mktemp -d /tmp/pc-ctr.XXXXXX)
cleanup() {
	$POD rm -f pc-ctr-n0-$$ pc-ctr-n1-$$ >/dev/null 2>&1
	$POD rmi -f "$IMG" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

if ! $POD image exists debian:12-slim 2>/dev/null; then
	echo "container: no debian:12-slim image; making one with debootstrap (about a minute)"
	if debootstrap --variant=minbase bookworm "$T/rootfs" http://deb.debian.org/debian \
		>"$T/debootstrap.log" 2>&1 &&
		tar -C "$T/rootfs" -c . | $POD import - localhost/debian:12-slim >/dev/null; then
		ok "debian:12-slim made with debootstrap"
	else
		bad "debootstrap"; tail -5 "$T/debootstrap.log"; exit 1
	fi
	rm -rf "$T/rootfs"
fi
mkdir -p "$T/ctx" "$T/etc"
cp "$DEB" "$T/ctx/"
# chroot isolation: RUN steps need no runtime container (apt inside the build)
if $POD build --pull=never --network host --isolation=chroot -f "$(dirname "$0")/../../dist/Containerfile" \
	-t "$IMG" "$T/ctx" >"$T/build.log" 2>&1; then
	ok "podman build -f dist/Containerfile"
else
	bad "podman build"; tail -20 "$T/build.log"; exit 1
fi

# The cluster: two nodes on ports the system picks, a secret the container's user reads.
ports=$(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $ports
P0=$1
P1=$2
uid=$($RUN --rm --entrypoint id "$IMG" -u)
head -c 32 /dev/urandom | base64 >"$T/etc/secret"
chown "$uid" "$T/etc/secret"
chmod 600 "$T/etc/secret"
cat >"$T/etc/cluster.yaml" <<EOF
name: ctr
store:
  mode: slotmap
  protocol: tcp
  slot_size_classes: [16KiB]
  global_segment_size: 64MiB
  auth_secret_file: /etc/peercache/secret
node_defaults:
  address: 127.0.0.1
nodes:
  - {name: n0, port: $P0}
  - {name: n1, port: $P1}
EOF
for n in n0 n1; do
	$RUN -d --name pc-ctr-$n-$$ -v "$T/etc:/etc/peercache:ro" "$IMG" --node $n >/dev/null 2>"$T/run-$n.log" ||
		{ bad "podman run $n"; cat "$T/run-$n.log"; }
done
up=0
for i in $(seq 1 100); do
	if "$(dirname "$PCBENCH")/pcctl" --discovery 127.0.0.1:$P1 --secret-file "$T/etc/secret" status \
		>"$T/status" 2>&1 && [ "$(grep -c ' up ' "$T/status")" = 2 ]; then
		up=1
		break
	fi
	sleep 0.2
done
[ $up = 1 ] && ok "both containers' nodes are up: $(tr '\n' ' ' <"$T/status")" ||
	{ bad "the containers' nodes did not come up"; cat "$T/status"; }
if "$PCBENCH" --topology "$T/etc/cluster.yaml" --set store.auth_secret_file="$T/etc/secret" \
	--keys 512 --page-size 12288 --iters 1 --no-raw-tcp --prefix ctr --min-hits 100 >"$T/bench.log" 2>&1; then
	ok "a host client wrote 512 pages through the containers and read all back"
else
	bad "pcbench against the containers"; tail -15 "$T/bench.log"
fi
pid=$($POD inspect --format '{{.State.Pid}}' pc-ctr-n0-$$ 2>/dev/null)
puid=$(ps -o uid= -p "${pid:-0}" 2>/dev/null | tr -d ' ')
[ -n "$uid" ] && [ "$puid" = "$uid" ] && ok "pcd runs as the image's peercache user (uid $uid)" ||
	bad "pcd's uid in the container: '$puid', the image's peercache user: '$uid'"
for n in n0 n1; do
	$POD logs pc-ctr-$n-$$ >"$T/log-$n" 2>&1
	grep -qi "error\|warn" "$T/log-$n" && { echo "  $n's log:"; sed 's/^/    /' "$T/log-$n" | tail -5; }
done
echo "container: $pass passed, $fail failed"
[ $fail = 0 ]
