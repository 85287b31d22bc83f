#!/usr/bin/env bash
# The kernel stage of `make test` (`make test-kernels` alone): the
# kernel-facing integration tests on the kernels Debian users run, each
# booted in VMs by tests/vm/vm.py, the backend left to the daemon's probe.
# KERNELS names Debian kernel packages, metapackages resolved at each run
# (default linux-image-amd64: Debian 12's own, 6.1). Which tests run, and
# why the others don't: tests/README.md. The subset is split over SHARDS
# guests of one vCPU each, run side by side (one per host CPU: two vCPUs in
# one guest livelocked under TCG, tests/vm/vm.py). Prints each guest's
# closing line and, under it, the tests that failed there by name, then
# "kernels: N passed, M failed" over all of them, and exits non-zero if
# anything failed (a guest that did not boot or ran out of time counts as a
# failure).
set -u
cd "$(dirname "$0")/../.."

OUT=${OUT:-build}
KERNELS=${KERNELS:-linux-image-amd64}
SHARDS=${SHARDS:-$(nproc)}
# The whole boot and run, per guest: a shard takes ~8 min under TCG here (tests/README.md)
VM_TIMEOUT=${VM_TIMEOUT:-1500}

# Test ids (run.py -k substrings; several in an item run in the same guest), each item with its
# rough cost in guest seconds,
# which balances the shards: the call model, failures, in flight, the
# breaker, the stall, enforcement (connect, abort on the sock_diag path and
# its fallback), ejection (per destination: refused, aborted on the sock_diag
# path, behind nginx), DNS over UDP (unbound: counts, rcodes, a silent resolver, enforcement),
# the daemon's life, status, metrics, HTTP/2 streams (the
# syscalls backend's walk of the user buffers, 6.1's verifier on the stream
# layer), and the real-traffic cases that fit.
SUBSET=(
	# Each item's cost is what its tests took in one guest of a fresh clone's make test of
	# 2026-12-07 (run.py --durations, 6.1.0-57 under TCG), plus ~13 s for a daemon its class
	# starts once (setUpClass, a shared daemon: in no test's duration; TLSCase's 40 s with its
	# wait for the discovery); a daemon start is 11-13 s there, 1.68 M instructions verified for
	# 43 programs (0.9 s on this host). By test durations alone the two guests were 349 and 348 s,
	# and ran 415 and 371.
	# The tests that share a daemon (a module's SHARED_DAEMON, a class's daemon in setUpClass,
	# harness.reloaded_daemon) are one item: in one guest, they start it once.
	# "beside": the item asserts nothing a guest kept off its CPU could change (exact counts,
	# capabilities, pins, which backend, valgrind's report, a reload's outcome; no latency, no
	# deadline of its own: the harness's start, stop and wait_for are PATIENCE times longer there),
	# so make test runs it during the integration stage (KERNELS_PART=beside, tests/run-all.sh), in
	# a guest the host's own tests preempt; the others after it (KERNELS_PART=after).
	"178 test_tls.TLSCase.test_ab_https_keepalive test_tls.TLSCase.test_asyncio_client test_tls.TLSCase.test_nginx_proxy_https test_tls.TLSCase.test_curl_loop test_tls.TLSCase.test_postgres_libpq test_tls.TLSCase.test_postgres_hang test_tls.TLSCase.test_bio_client_own_method"
	"65 test_h2.GrpcTest.test_counts_and_latency test_h2.GrpcTest.test_hang_8_streams test_h2.GrpcTest.test_client_cancels"
	"27 test_abort.AbortTest.test_abort_releases_hanging_pool test_abort.AbortTest.test_abort_after test_abort.AbortTest.test_forced_open_only_what_was_asked"
	"92 test_dns."
	"39 beside test_calls.Test14Lifecycle"
	"179 beside test_valgrind."
	"59 beside test_goodbye."
	"32 test_calls.Test01ExactCallCounts test_calls.Test02P50Accuracy test_calls.Test03InflightAndOldestAge test_calls.Test06RefusedConnect test_calls.Test07FailedCalls test_calls.Test12CallBoundaries"
	"52 test_eject_nginx."
	"56 beside test_h2.H2WireTest.test_frames_split_byte_by_byte test_h2.H2WireTest.test_desync_drops_and_falls_back test_h2.H2WireTest.test_server_resets_and_5xx test_h2.H2WireTest.test_goaway_then_close test_h2.H2WireTest.test_streams_over_the_limit"
	"38 test_eject.EjectTest.test_slow_replica_ejected_aborted_refused_and_back test_eject.EjectTest.test_max_ejected_two_slow_of_three test_eject.EjectTest.test_manual_eject_and_return"
	"26 test_abort.AbortTest.test_without_sock_destroy_falls_back"
	"20 test_callers.TestCallers.test_two_callers_named_and_counted"
	"14 beside test_breaker.BreakerTest.test_reload_keeps_old_config_on_error_and_applies_a_good_one"
	"38 test_pool.PoolTest.test_small_pools_hang_open_in_time"
	"20 test_cascade.CascadeTest.test_forecast"
	"16 beside test_backend.Test02EverySyscall"
	"15 beside test_backend.Test01WhichBackend"
	"17 test_abort.NginxAbortTest."
	"19 test_breaker.BreakerTest.test_slowdown_opens_fast_logs_and_recovers"
	"21 test_control.ControlClientsTest.test_control_cut_answer_is_an_error"
	"20 beside test_lifecycle.LifecycleTest.test_keeps_only_cap_bpf_and_cap_perfmon"
	"19 beside test_install.UnitCapabilitiesTest."
	"22 test_metrics.Test01MetricsBody"
	"19 test_enforce.EnforceTest.test_forced_open_rejects_fast_and_auto_lifts test_enforce.EnforceTest.test_half_open_lets_exactly_the_probes_through"
	"14 test_eject.EjectReloadTest.test_reload_keeps_or_ends_and_a_dead_daemon_refuses_nothing"
	"15 test_abort.NetnsAbortTest."
	"13 test_breaker.BreakerTest.test_max_inflight_opens_on_concurrency"
	"12 test_enforce.FailOpenTest.test_kill_9_fails_open_within_3_seconds"
	"13 test_enforce.FailOpenTest.test_sigstop_fails_open_when_the_lease_runs_out"
	"16 beside test_lifecycle.LifecycleTest.test_clean_stop_leaves_no_programs_and_no_pins"
	# Go's TLS uprobes on 6.1 (doc/go.md): the offsets from the table, the RETs, and entries
	# repeated under Go's preemption signals (GOMAXPROCS=8 on one vCPU)
	"11 beside test_gotls_probe.GoTLSProbeTest.test_gomaxprocs test_gotls_probe.GoTLSProbeTest.test_stripped"
	"18 test_realtraffic.Test6HTTP2.test_nghttpd"
	"19 test_realtraffic.Test1KeepAlive.test_wrk_keepalive"
)

# one suite at a time on this machine (tests/suitelock.sh); make test's run holds it already
. tests/suitelock.sh
suitelock_take "tests/vm/kernels.sh, KERNELS=$KERNELS"

[ "$SHARDS" -ge 1 ] 2>/dev/null || SHARDS=1
# KERNELS_PART: all (the default, make test-kernels), beside or after (make test: the items marked
# beside during the integration stage, the others after it).
PART=${KERNELS_PART:-all}
case "$PART" in
all | beside | after) ;;
*) echo "kernels.sh: KERNELS_PART is all, beside or after, not \"$PART\"" >&2; exit 2 ;;
esac
# Greedy: each item of the part, costliest first, to the shard with the least so far.
declare -a load shard_args
for ((i = 0; i < SHARDS; i++)); do load[i]=0; shard_args[i]=""; done
mapfile -t SORTED < <(printf '%s\n' "${SUBSET[@]}" | sort -rn -k1,1)
for item in "${SORTED[@]}"; do
	cost=${item%% *} t=${item#* } best=0
	marked=after
	if [ "${t%% *}" = beside ]; then marked=beside t=${t#beside }; fi
	[ "$PART" = all ] || [ "$PART" = "$marked" ] || continue
	for ((i = 1; i < SHARDS; i++)); do
		[ "${load[i]}" -lt "${load[best]}" ] && best=$i
	done
	load[best]=$((load[best] + cost))
	# an item's patterns (one or more words) go to the same guest
	for p in $t; do shard_args[best]="${shard_args[best]} -k $p"; done
done

passed=0 failed=0
summary=""
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for k in $KERNELS; do
	echo "== kernels: $k in $SHARDS VMs of one vCPU (tests/vm/vm.py), items: $PART"
	start=$(date +%s)
	# fetched once, before the guests that share it start
	python3 tests/vm/vm.py --kernel "$k" --fetch-only
	for ((i = 0; i < SHARDS; i++)); do
		[ -n "${shard_args[i]}" ] || continue
		: > "$logs/$i"
		# the backend the probe picks there, by the rule run-all.sh uses here
		# shellcheck disable=SC2086 # shard_args holds -k words
		{ python3 tests/vm/vm.py --kernel "$k" --timeout "$VM_TIMEOUT" --cpus 1 --mem 4G \
			--env DEPWATCH="$OUT/depwatch" --env DW_VM=tcg --env DW_VM_PART="$PART" --env DW_TEST_LOCK=held -- \
			sh -c 'grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux && b=sock || b=syscalls
				echo "kernels: backend $b"; exec "$@"' sh \
			python3 tests/integration/run.py --durations 40 ${shard_args[i]} > "$logs/$i" 2>&1
		  echo $? > "$logs/$i.rc"; } &
		# the guest's console, each line marked with its guest, as it comes, until the guest ends
		tail -n +1 -f --pid=$! "$logs/$i" | sed -u "s/^/[vm $i] /" &
	done
	wait
	took=$(($(date +%s) - start))
	for ((i = 0; i < SHARDS; i++)); do
		[ -n "${shard_args[i]}" ] || continue
		rc=$(cat "$logs/$i.rc")
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/$i" | tail -n1)
		p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
		f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
		kernel=$(sed -n 's/^depwatch-vm: up, Linux \([^,]*\),.*/\1/p' "$logs/$i" | head -n1)
		backend=$(sed -n 's/^kernels: backend \([a-z]*\)$/\1/p' "$logs/$i" | head -n1)
		passed=$((passed + ${p:-0}))
		failed=$((failed + ${f:-0}))
		if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
		summary="$summary
   $k vm $i (Linux ${kernel:-?}, backend ${backend:-?}): ${line:-no result line (vm.py exit $rc)}"
		# run.py's "failed: ID" lines, under the guest's count
		names=$(sed -n 's/^failed: /      failed: /p' "$logs/$i")
		[ -z "$names" ] || summary="$summary
$names"
	done
	summary="$summary
   $k: $took s"
	rm -f "$logs"/*
done
echo "== kernels:$summary"
echo "kernels: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
