#!/usr/bin/env bash
# The machine-wide test lock (issue 45): one integration run or kernel stage at a time on this
# machine, helpers' and CI's alike. Two suites side by side on 2 cores slowed each other until
# their timing tests failed for reasons that were not in the code; their daemons also judged each
# other's traffic. Sourced: `. tests/suitelock.sh; suitelock_take "what"` takes the lock on fd 9
# (waiting, and saying for whom, when another run holds it) and exports DW_TEST_LOCK=held so the
# run's own children (tests/integration/run.py, tests/vm/kernels.sh) do not take it again. The
# lock goes with the shell that took it: flock(2) on an open file, released when it exits, even
# by kill -9. run.py takes the same lock in Python (fcntl.flock, tests/integration/suitelock.py).
DW_TEST_LOCK_FILE=${DW_TEST_LOCK_FILE:-/run/lock/depwatch-tests.lock}

suitelock_take() {
	[ "${DW_TEST_LOCK:-}" = held ] && return 0
	mkdir -p "$(dirname "$DW_TEST_LOCK_FILE")"
	exec 9>>"$DW_TEST_LOCK_FILE"
	if ! flock -n 9; then
		local since=$SECONDS
		echo "depwatch tests: waiting for the machine's test lock ($DW_TEST_LOCK_FILE), held by: $(cat "$DW_TEST_LOCK_FILE" 2>/dev/null)"
		flock 9
		echo "depwatch tests: got the test lock after $((SECONDS - since)) s"
	fi
	# who holds it, for the next one that waits
	echo "pid $$, $1, in $(pwd), since $(date -u '+%Y-%m-%d %H:%M:%S UTC')" > "$DW_TEST_LOCK_FILE"
	export DW_TEST_LOCK=held
}
