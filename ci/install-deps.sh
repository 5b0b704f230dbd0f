#!/bin/sh
# install-deps.sh - install every Debian package peercache's build and tests need.
#
# Idempotent: packages already present are left alone; `apt-get update` runs once
# per invocation and only when something is missing. Needs root (CI runs as root).
# python3-torch and python3-numpy are for the Python package's tests (host KV pools
# built from torch tensors, as SGLang's are); the package itself needs neither.
# libssl-dev is for libcrypto (HMAC-SHA256 and nonces of the tcp handshake).
# curl and prometheus (for promtool) are for the metrics endpoint's tests; file is
# for cpack's Debian generator (dpkg-shlibdeps comes with build-essential).
# libcurl is for membership in etcd; etcd-server and etcd-client for its tests.
# memcached, redis-server, libmemcached-dev and libhiredis-dev are the peers pcbench
# compares the store with (its own clients and the standard C libraries); linux-perf
# profiles them (ci/bench.sh). podman, runc and debootstrap build and run
# dist/Containerfile's image (tests/install/container_test.sh).
# Not for: the rxe VM's kernel and userland, which ci/rxe-vm.sh downloads itself.
set -eu

PKGS="build-essential cmake pkg-config valgrind git
      rdma-core libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
      libxxhash-dev libyaml-dev libcunit1-dev libjansson-dev libssl-dev libmicrohttpd-dev gnuplot-nox
      curl prometheus file libcurl4-openssl-dev etcd-server etcd-client
      memcached redis-server libmemcached-dev libhiredis-dev linux-perf
      iproute2 procps psmisc podman runc debootstrap
      python3 python3-torch python3-numpy
      clang libclang-rt-14-dev"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
		|| missing="$missing $p"
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing; run this script as root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing$missing"
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
