#!/bin/sh
# pcctl_args_test.sh PCCTL - what pcctl is given reaches the fabric as given: a
# --secret-file path with a quote or a backslash names that file (pcctl writes
# its one-node topology as YAML, where both are escapes); stats takes no more
# endpoints than it scrapes. Nothing listens on 127.0.0.1 port 1, so a secret
# read well ends in "no view" and exit 1.
set -u
PCCTL=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

for name in 'sec"ret' 'sec\x41' 'sec\\ret'; do
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/$name"
	chmod 600 "$T/$name"
	err=$("$PCCTL" --secret-file "$T/$name" --discovery 127.0.0.1:1 status 2>&1)
	rc=$?
	if [ "$rc" -eq 1 ] && echo "$err" | grep -q "no view"; then
		echo "PASS --secret-file $name: read, then: $err"
	else
		echo "FAIL --secret-file $name: exit $rc: $err"
		fails=$((fails + 1))
	fi
done

# pcctl stats scrapes at most 512 endpoints: one more is a bad command line, not
# a row left out without a word.
set -- $(seq 513 | sed 's/.*/127.0.0.1:1/')
out=$("$PCCTL" stats "$@" 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && echo "$out" | grep -q "more than the 512"; then
	echo "PASS stats with 513 endpoints: $out"
else
	echo "FAIL stats with 513 endpoints: exit $rc, $(echo "$out" | grep -c 127.0.0.1:1) rows"
	fails=$((fails + 1))
fi
echo "pcctl_args: $fails failed"
[ "$fails" -eq 0 ]
