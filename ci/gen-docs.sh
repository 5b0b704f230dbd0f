#!/bin/sh
# gen-docs.sh BUILD - regenerate what the docs.* tests check against the programs:
# docs/man/*.1 (each tool's --man) and the key tables of docs/configuration.md
# (pctopo --schema, between its BEGIN/END markers). Run it after changing a tool's
# help table or a key in core/config/topology_fields.c, and commit the result.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
for t in tools/pcd tools/pcctl tools/pctopo tools/pcdemo tools/pcbench tools/pctierbench \
	 sim/pcsim sim/pcsimbench sim/pccalibrate; do
	"$B/$t" --man >"docs/man/${t##*/}.1"
done
"$B/tools/pctopo" --schema >"$B/schema.md"
./ci/splice-block.sh docs/configuration.md keys "$B/schema.md"
echo "gen-docs: docs/man/*.1 and docs/configuration.md regenerated from $B"
