#!/bin/sh
# pcctl_args_test.sh PCCTL - what pcctl is given reaches the fabric as given: a
# --secret-file path with a quote or a backslash names that file (pcctl writes
# its one-node topology as YAML, where both are escapes). Nothing listens on
# 127.0.0.1 port 1, so a secret read well ends in "no view" and exit 1.
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
echo "pcctl_args: $fails failed"
[ "$fails" -eq 0 ]
