#!/bin/sh
# docs_test.sh BUILD SRC - the docs that are generated from the programs still match
# them, and every program explains itself:
#   - docs/man/NAME.1 is NAME --man, byte for byte, for every tool;
#   - NAME --help prints a synopsis and exits 0, --version names the version, and
#     NAME with no arguments prints the synopsis and exits 2;
#   - the key tables of docs/configuration.md are pctopo --schema (which fails on a
#     key without a description), and every key pctopo --write prints is in them.
# A stale doc fails with the command that regenerates it (ci/gen-docs.sh BUILD).
set -u
B=$1
S=$2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp -d /tmp/pc-docs.XXXXXX)
trap 'rm -rf "$T"' EXIT

VERSION=$(sed -n 's/^project(peercache VERSION \([0-9.]*\).*/\1/p' "$S/CMakeLists.txt")
for t in tools/pcd tools/pcctl tools/pctopo tools/pcdemo tools/pcbench tools/pctierbench \
	 sim/pcsim sim/pcsimbench sim/pccalibrate; do
	n=${t##*/}
	if "$B/$t" --man >"$T/$n.1" && cmp -s "$T/$n.1" "$S/docs/man/$n.1"; then ok; else
		bad "docs/man/$n.1 differs from '$n --man' (run ci/gen-docs.sh $B and commit)"
		diff "$S/docs/man/$n.1" "$T/$n.1" | head -5
	fi
	if "$B/$t" --help >"$T/help" && grep -q "^usage: $n " "$T/help" && grep -q -- "--version" "$T/help"
	then ok; else bad "$n --help: no usage line or not exit 0"; fi
	if "$B/$t" --version | grep -q "^$n (peercache) $VERSION"; then ok; else bad "$n --version"; fi
	"$B/$t" >/dev/null 2>"$T/noargs"
	rc=$?
	if [ $rc = 2 ] && grep -q "^usage: $n " "$T/noargs"; then ok; else
		bad "$n with no arguments: exit $rc, want 2 and the usage on stderr"
	fi
	if "$B/$t" --no-such-flag >/dev/null 2>"$T/flag"; then bad "$n --no-such-flag: exit 0"
	elif [ "$(wc -l <"$T/flag")" = 1 ] && grep -q "^$n: --no-such-flag: .*see --help" "$T/flag"; then ok
	else bad "$n --no-such-flag: want one line '$n: --no-such-flag: ...; see --help', got: $(cat "$T/flag")"; fi
done

# configuration.md: the generated block, then every key of a resolved topology
if "$B/tools/pctopo" --schema >"$T/schema.md"; then
	awk '/<!-- BEGIN keys/ { on = 1; next } /<!-- END keys/ { on = 0 } on' \
		"$S/docs/configuration.md" >"$T/doc.md"
	if cmp -s "$T/schema.md" "$T/doc.md"; then ok; else
		bad "docs/configuration.md's key tables differ from 'pctopo --schema' (run ci/gen-docs.sh $B and commit)"
		diff "$T/doc.md" "$T/schema.md" | head -5
	fi
else
	bad "pctopo --schema failed: a key has no description (see above)"
fi
"$B/tools/pctopo" --topology "$S/topologies/rack.yaml" --write >"$T/rack.yaml" 2>/dev/null ||
	bad "pctopo --write rack.yaml"
# the last part of every documented key (`nodes[].rails[].gbps` -> gbps), then each key
# of the resolved file must be one of them
sed -n 's/^| `\([^`]*\)`.*/\1/p' "$T/doc.md" | sed 's/.*[.]//' | sort -u >"$T/documented"
sed -n 's/^ *\([a-z_]*\):.*/\1/p' "$T/rack.yaml" | grep -vx 'name\|store\|model\|nodes' | sort -u >"$T/written"
missing=$(comm -23 "$T/written" "$T/documented" | tr '\n' ' ')
if [ -z "$missing" ]; then ok; else bad "keys pctopo --write prints that docs/configuration.md lacks:$missing"; fi

echo "docs: $pass passed, $fail failed"
[ $fail = 0 ]
