#!/usr/bin/env bash
# Runs each unit-test binary given as an argument, shows its output, and
# fails if any of them fails. All run even after a failure, so one report
# shows every broken test.
set -u

if [ $# -eq 0 ]; then
	echo "usage: $0 TEST_BINARY..." >&2
	exit 2
fi

failed=()
for t in "$@"; do
	echo "=== $t"
	if [ ! -x "$t" ]; then
		echo "run-unit: $t: not an executable file" >&2
		failed+=("$t")
		continue
	fi
	"$t"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "run-unit: $t: exit status $rc" >&2
		failed+=("$t")
	fi
done

echo
if [ ${#failed[@]} -ne 0 ]; then
	echo "run-unit: ${#failed[@]} of $# failed: ${failed[*]}" >&2
	exit 1
fi
echo "run-unit: all $# passed"
exit 0
