#!/bin/sh
# demo.sh - the main job, the README's first command: install, build, and show the
# laptop topology's slot geometry and where 100000 keys land.
set -eu
cd "$(dirname "$0")/.."
./ci/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
./build/tools/pctopo --topology "${1:-topologies/laptop.yaml}"
