#!/usr/bin/env bash
# Runs every test suite: the cmocka unit tests (given as arguments, built with
# ASan/UBSan), the integration tests against the real kernel, once per
# tracing backend (sock, syscalls), and the kernel stage: the kernel-facing
# integration tests on Debian's own kernel in a VM (tests/vm/kernels.sh,
# KERNELS). Prints one closing line, "N passed, M failed", counting all of
# them, and exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for t in "$@"; do
	echo "== unit: $t"
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
done

echo "== fuzz: a short libFuzzer run over the config parser (make fuzz for a long one)"
if bash tests/fuzz/run.sh 15; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

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
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
	f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
	summary="$summary
   integration, backend $backend: ${line:-no result line (exit status $rc)}"
done
echo "== kernels: the kernel-facing integration tests on other kernels, in a VM (tests/vm/kernels.sh)"
bash tests/vm/kernels.sh 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
line=$(grep -E '^kernels: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
p=$(echo "$line" | sed -n 's/^kernels: \([0-9]*\) passed.*/\1/p')
f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
passed=$((passed + ${p:-0}))
failed=$((failed + ${f:-0}))
if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
echo "== integration per backend:$summary
   kernels: ${line:-no result line (exit status $rc)}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
