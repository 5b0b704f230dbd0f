#!/bin/sh
# splice-block.sh FILE NAME CONTENT - replace the lines between FILE's
# "<!-- BEGIN NAME" and "<!-- END NAME" markers (both kept) with the file CONTENT:
# how the generated parts of docs/ are rewritten (gen-docs.sh, plan-example.sh).
set -eu
tmp=$(mktemp "$1.XXXXXX")
awk -v content="$3" -v begin="<!-- BEGIN $2" -v end="<!-- END $2" '
	index($0, begin) == 1 { print; while ((getline l < content) > 0) print l; skip = 1; next }
	index($0, end) == 1 { skip = 0 }
	!skip { print }' "$1" >"$tmp"
mv "$tmp" "$1"
