#!/bin/sh
# test.sh - the whole test suite; the README's second command and what CI runs.
#
# Installs the Debian packages (ci/install-deps.sh), builds with -Werror, runs every
# CTest label (unit, valgrind, e2e, netns, sim, docs, install, python, rxe), builds the
# .deb from a /usr build and checks it (tests/install/deb_test.sh: unpacked, then, as
# root where no peercache package is installed, installed with apt and purged) and
# dist/Containerfile's image (tests/install/container_test.sh), then rebuilds with
# ASan+UBSan and runs the unit and e2e tests again, then with ThreadSanitizer and runs
# the unit tests again, then builds the libFuzzer targets with clang and fuzzes each
# for 20 s. Exit code 0 only when all of that passed.
set -eu
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
T0=$(date +%s)

./ci/install-deps.sh

echo "== build (-Werror)"
cmake -S . -B build -DPC_WERROR=ON >/dev/null
cmake --build build -j "$JOBS"

echo "== ctest: all labels"
ctest --test-dir build --output-on-failure -j "$JOBS"

echo "== package: the .deb of a /usr build (cpack -G DEB)"
cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DPC_BUILD_TESTS=OFF -DPC_WERROR=ON >/dev/null
cmake --build build-deb -j "$JOBS" >/dev/null
rm -rf build-deb/pkg
(cd build-deb && cpack -G DEB -B pkg >/dev/null)
./tests/install/deb_test.sh build-deb/pkg/peercache_*.deb
echo "== container: dist/Containerfile's image, two nodes in containers, a client on the host"
./tests/install/container_test.sh build-deb/pkg/peercache_*.deb build/tools/pcbench

echo "== build (ASan+UBSan)"
cmake -S . -B build-asan -DPC_WERROR=ON -DPC_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$JOBS"
echo "== ctest under ASan+UBSan: unit and e2e"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan --output-on-failure -j "$JOBS" -L 'unit|e2e'

echo "== build (ThreadSanitizer)"
cmake -S . -B build-tsan -DPC_WERROR=ON -DPC_TSAN=ON >/dev/null
cmake --build build-tsan -j "$JOBS"
echo "== ctest under ThreadSanitizer: unit (a race report fails the test)"
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp history_size=7 halt_on_error=1" \
	ctest --test-dir build-tsan --output-on-failure -L unit

echo "== fuzz (libFuzzer, ASan+UBSan): each target for 20 s"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DPC_FUZZ=ON -DPC_WERROR=ON >/dev/null
cmake --build build-fuzz -j "$JOBS" --target pc_fuzzers
./tests/fuzz/run.sh build-fuzz 20

echo "ci/test.sh: PASS in $(( $(date +%s) - T0 ))s"
