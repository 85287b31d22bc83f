#!/usr/bin/env bash
# The kernel stage of `make test` (`make test-kernels` alone): the
# kernel-facing integration tests on the kernels Debian users run, each
# booted in a VM by tests/vm/vm.py, the backend left to the daemon's probe.
# KERNELS names Debian kernel packages, metapackages resolved at each run
# (default linux-image-amd64: Debian 12's own, 6.1). Which tests run, and
# why the others don't: tests/README.md. Prints each kernel's closing line,
# then "kernels: N passed, M failed" over all of them, and exits non-zero if
# anything failed (a kernel that did not boot or ran out of time counts as a
# failure).
set -u
cd "$(dirname "$0")/../.."

OUT=${OUT:-build}
KERNELS=${KERNELS:-linux-image-amd64}
# The whole boot and run, per kernel: the subset takes ~15 min under TCG on 2 cores (tests/README.md)
VM_TIMEOUT=${VM_TIMEOUT:-1800}

# Test ids (run.py -k substrings): the call model, failures, in flight, the
# breaker, the stall, enforcement (connect, abort on both paths), the daemon's
# life, status, metrics, HTTP/2 streams (the syscalls backend's walk of the
# user buffers, 6.1's verifier on the stream layer), and the real-traffic
# cases that fit.
SUBSET=(
	test_calls.
	test_backend.
	test_breaker.
	test_pool.PoolTest.test_small_pools_hang_open_in_time
	test_enforce.
	test_abort.AbortTest.
	test_abort.NetnsAbortTest.
	test_abort.NginxAbortTest.
	test_lifecycle.
	test_callers.
	test_cascade.CascadeTest.test_forecast
	test_cascade.CascadeTest.test_path_p99
	test_cascade.CascadeTest.test_check_budget
	test_control.
	test_metrics.Test01
	test_metrics.Test02
	test_metrics.Test03
	test_metrics.Test04
	test_install.InstallTest.test_unit_capabilities_are_enough
	test_valgrind.
	test_realtraffic.Test1KeepAlive.
	test_realtraffic.Test5Redis.test_redis_benchmark
	test_realtraffic.Test6HTTP2.test_nghttpd
	test_h2.GrpcTest.test_counts_and_latency
	test_h2.GrpcTest.test_hang_8_streams
	test_h2.GrpcTest.test_client_cancels
	test_h2.H2WireTest.
)

args=()
for t in "${SUBSET[@]}"; do
	args+=(-k "$t")
done

passed=0 failed=0
summary=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for k in $KERNELS; do
	echo "== kernels: $k in a VM (tests/vm/vm.py)"
	start=$(date +%s)
	# the backend the probe picks there, by the rule run-all.sh uses here
	python3 tests/vm/vm.py --kernel "$k" --timeout "$VM_TIMEOUT" --env DEPWATCH="$OUT/depwatch" --env DW_VM=tcg -- \
		sh -c 'grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux && b=sock || b=syscalls
			echo "kernels: backend $b"; exec "$@"' sh \
		python3 tests/integration/run.py --durations 10 "${args[@]}" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	took=$(($(date +%s) - start))
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
	f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	kernel=$(sed -n 's/^depwatch-vm: up, Linux \([^,]*\),.*/\1/p' "$log" | head -n1)
	backend=$(sed -n 's/^kernels: backend \([a-z]*\)$/\1/p' "$log" | head -n1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
	summary="$summary
   $k (Linux ${kernel:-?}, backend ${backend:-?}): ${line:-no result line (vm.py exit $rc)} in $took s"
done
echo "== kernels:$summary"
echo "kernels: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
