#!/usr/bin/env bash
# `make itest K=PATTERN [KERNELS=...]`: the edit-build-test loop's focused run (issue 45). The
# integration tests whose id contains one of K's words (run.py -k), on the sock backend (where the
# kernel has it) and the syscalls one, then, for each of ITEST_KERNELS (make's KERNELS when given on
# its command line), in one guest of the kernel stage (tests/vm/vm.py, the backend the probe picks).
# Each run lists its 10 slowest tests and its daemon starts ("daemon starts: N, S s in all": what
# sharing a daemon saves). One closing line, "N passed, M failed" over all of them; non-zero if
# anything failed. Holds the machine's test lock throughout (tests/suitelock.sh).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}

if [ -z "${K:-}" ]; then
	echo "make itest: name the tests, K=PATTERN (a substring of their ids; K=\"a b\" for several)" >&2
	exit 2
fi
ks=()
for k in $K; do ks+=(-k "$k"); done

. tests/suitelock.sh
suitelock_take "make itest K=\"$K\""

passed=0 failed=0 summary=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# one run's closing line into the totals and the summary; $1 its name, $2 its exit status
add() {
	local line p f starts
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
	f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	[ "$2" -ne 0 ] && [ "${f:-0}" -eq 0 ] && failed=$((failed + 1))
	starts=$(sed -n 's/^daemon starts: \([0-9]*\), \([0-9]*\) s in all.*/; \1 daemon starts, \2 s/p' "$log")
	summary="$summary
   $1: ${line:-no result line (exit status $2)}, $3 s$starts"
	# run.py's "failed: ID" lines, under the count
	names=$(sed -n 's/^failed: /      failed: /p' "$log")
	[ -z "$names" ] || summary="$summary
$names"
}

for backend in sock syscalls; do
	if [ "$backend" = sock ] && ! grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux; then
		summary="$summary
   backend sock: skipped, this kernel lacks the sock_send_length tracepoint (Linux 6.3+)"
		continue
	fi
	echo "== itest: backend $backend, $K"
	start=$SECONDS
	DW_BACKEND=$backend python3 tests/integration/run.py --durations 10 "${ks[@]}" 2>&1 | tee "$log"
	add "backend $backend" "${PIPESTATUS[0]}" $((SECONDS - start))
done

for kernel in ${ITEST_KERNELS:-}; do
	echo "== itest: $kernel in one guest (tests/vm/vm.py), $K"
	start=$SECONDS
	python3 tests/vm/vm.py --kernel "$kernel" --timeout 1500 --cpus 1 --mem 4G \
		--env DEPWATCH="$OUT/depwatch" --env DW_VM=tcg --env DW_TEST_LOCK=held -- \
		python3 tests/integration/run.py --durations 10 "${ks[@]}" 2>&1 | tee "$log"
	add "$kernel" "${PIPESTATUS[0]}" $((SECONDS - start))
done

echo "== itest:$summary"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
