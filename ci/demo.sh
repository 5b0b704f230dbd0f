#!/bin/sh
# demo.sh - the main job, the README's first command: install the packages, build,
# start the 3-node cluster of topologies/laptop.yaml over tcp on loopback (one
# process per node), write pages from one node, read them back from the other two
# byte for byte, and stop every process. Extra arguments go to pcdemo.
set -eu
cd "$(dirname "$0")/.."
./ci/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
# pcdemo stops its node processes itself; this catches anything left on ^C.
trap 'pkill -KILL -P $$ pcdemo 2>/dev/null || true' EXIT INT TERM
./build/tools/pcdemo --topology topologies/laptop.yaml "$@"
