#!/bin/sh
# gen-docs.sh BUILD - regenerate what the docs.* tests check against the programs:
# docs/man/*.1 (each tool's --man) and the key tables of docs/configuration.md
# (pctopo --schema, between its BEGIN/END markers). Run it after changing a tool's
# help table or a key in core/config/topology_fields.c, and commit the result.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
for t in tools/pcd tools/pcctl tools/pctopo tools/pcdemo tools/pcbench tools/pctierbench \
	 sim/pcsim sim/pcsimbench; do
	"$B/$t" --man >"docs/man/${t##*/}.1"
done
"$B/tools/pctopo" --schema >"$B/schema.md"
awk -v schema="$B/schema.md" '
	/<!-- BEGIN keys/ { print; while ((getline l < schema) > 0) print l; skip = 1; next }
	/<!-- END keys/ { skip = 0 }
	!skip { print }' docs/configuration.md >"$B/configuration.md"
mv "$B/configuration.md" docs/configuration.md
echo "gen-docs: docs/man/*.1 and docs/configuration.md regenerated from $B"
