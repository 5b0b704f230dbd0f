#!/bin/sh
# exports_test.sh LIB HEADER_DIR MAP - libpeercache.so exports exactly the PC_API
# declarations of the public headers, each under the version script's node.
set -eu
lib=$1 hdrs=$2 map=$3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# every function declared PC_API (the declaration may wrap onto the next line)
cat "$hdrs"/*.h | tr '\n' ' ' | grep -o 'PC_API [^;(]*(' | sed 's/($//; s/.*[ *]//' | grep '^pc_' |
	sort -u >"$t/headers"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRV]$/ { print $3 }' | sed 's/@.*//' |
	sort -u >"$t/exported"
grep -o '^[[:space:]]*pc_[a-z0-9_]*;' "$map" | tr -d ' \t;' | sort -u >"$t/map"
node=$(sed -n 's/^\(PEERCACHE_[0-9.]*\) {.*/\1/p' "$map" | tail -1)

fail=0
if ! diff -u "$t/headers" "$t/exported" >"$t/d1"; then
	echo "exports_test: exported symbols differ from the headers' PC_API declarations:"
	cat "$t/d1"
	fail=1
fi
if ! diff -u "$t/headers" "$t/map" >"$t/d2"; then
	echo "exports_test: $map lists other symbols than the headers declare:"
	cat "$t/d2"
	fail=1
fi
unversioned=$(objdump -T "$lib" | awk '/ pc_/ && $0 !~ /PEERCACHE_/ { print $NF }')
if [ -n "$unversioned" ]; then
	echo "exports_test: exported without a version: $unversioned"
	fail=1
fi
n=$(wc -l <"$t/headers")
[ "$fail" = 0 ] && echo "exports_test: $n symbols, all declared PC_API, all under ${node:-?}: PASS"
exit "$fail"
