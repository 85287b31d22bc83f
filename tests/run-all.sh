#!/usr/bin/env bash
# Runs every test suite: the cmocka unit tests (given as arguments, built with
# ASan/UBSan), the integration tests against the real kernel, once per
# tracing backend (sock, syscalls), and the kernel stage: the kernel-facing
# integration tests on Debian's own kernel in a VM (tests/vm/kernels.sh,
# KERNELS). Names the tests that failed under each stage's count, then
# prints one closing line, "N passed, M failed", counting all of them, and
# exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Adds a stage's counts (rc, passed, failed): one that failed without counting a failure counts one.
count() {
	passed=$((passed + ${2:-0}))
	failed=$((failed + ${3:-0}))
	if [ "$1" -ne 0 ] && [ "${3:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
}

# The log's last "N passed, M failed" line, after the prefix $1 ("" or "kernels: ").
closing() {
	grep -E "^$1[0-9]+ passed, [0-9]+ failed" "$log" | tail -n1
}

# count for a closing line: its rc and the line.
count_line() {
	count "$1" "$(echo "$2" | sed -n 's/^[a-z]*:* *\([0-9]*\) passed.*/\1/p')" \
		"$(echo "$2" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')"
}

for t in "$@"; do
	echo "== unit: $t"
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	count "$rc" "$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)" \
		"$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)"
done

echo "== fuzz: a short libFuzzer run over the config parser and the Go probe finder (make fuzz for a long one)"
if bash tests/fuzz/run.sh 15; then count 0 1 0; else count 1 0 1; fi

# The whole integration suite once per tracing backend, with the same assertions
# (DW_BACKEND makes every daemon of the run start with --backend).
summary=""
for backend in sock syscalls; do
	if [ "$backend" = sock ] && ! grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux; then
		summary="$summary
   integration, backend sock: skipped, this kernel lacks the sock_send_length tracepoint (Linux 6.3+)"
		continue
	fi
	echo "== integration, backend $backend (real kernel, real sockets)"
	DW_BACKEND=$backend python3 tests/integration/run.py 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(closing "")
	count_line "$rc" "$line"
	summary="$summary
   integration, backend $backend: ${line:-no result line (exit status $rc)}"
	# run.py's "failed: ID" lines, under the count
	names=$(sed -n 's/^failed: /      failed: /p' "$log")
	[ -z "$names" ] || summary="$summary
$names"
done

echo "== kernels: the kernel-facing integration tests on other kernels, in a VM (tests/vm/kernels.sh)"
bash tests/vm/kernels.sh 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
line=$(closing "kernels: ")
count_line "$rc" "$line"
shown=${line#kernels: }
echo "== integration per backend:$summary
   kernels: ${shown:-no result line (exit status $rc)}"
grep '^      failed: ' "$log" || true

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
