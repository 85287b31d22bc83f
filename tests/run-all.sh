#!/usr/bin/env bash
# Runs every test suite: the cmocka unit tests (given as arguments, built with
# ASan/UBSan), the integration tests against the real kernel, once per
# tracing backend (sock, syscalls), and the kernel stage: the kernel-facing
# integration tests on Debian's own kernel in a VM (tests/vm/kernels.sh,
# KERNELS). Names the tests that failed under each stage's count, then
# prints one closing line, "N passed, M failed", counting all of them, and
# exits non-zero if anything failed. Every stage's closing line and the final summary say how
# long it took (issue 36: the CI log says where the time goes).
set -u
cd "$(dirname "$0")/.."

# One suite at a time on this machine (tests/suitelock.sh), from the first stage: the unit tests,
# fuzzers and the package's build compute on both CPUs, and a make itest started during them ran
# beside them (2026-12-07: twice, when the lock was taken only at the integration stage).
. tests/suitelock.sh
suitelock_take "make test (tests/run-all.sh)"

passed=0 failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Adds a stage's counts (rc, passed, failed): one that failed without counting a failure counts one.
count() {
	passed=$((passed + ${2:-0}))
	failed=$((failed + ${3:-0}))
	if [ "$1" -ne 0 ] && [ "${3:-0}" -eq 0 ]; then failed=$((failed + 1)); fi
}

# "12 min 3 s" since the stage began at $1 (bash's SECONDS).
took() {
	local s=$((SECONDS - $1))
	if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}
all_start=$SECONDS

# The log's last "N passed, M failed" line, after the prefix $1 ("" or "kernels: ").
closing() {
	grep -E "^$1[0-9]+ passed, [0-9]+ failed" "$log" | tail -n1
}

# count for a closing line: its rc and the line.
count_line() {
	count "$1" "$(echo "$2" | sed -n 's/^[a-z]*:* *\([0-9]*\) passed.*/\1/p')" \
		"$(echo "$2" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')"
}

# The Debian package for test_deb (DW_DEB_FILE, where `make deb` puts it), built beside the unit
# tests and fuzzers (each of the three uses one CPU: issue 45, half a minute less before the
# integration stage), waited for before it. A make of its own: none of the caller's jobserver.
deb_pid=""
if [ -n "${DW_DEB_FILE:-}" ]; then
	deb_log=${OUT:-build}/deb-make.log
	( env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL DEB_BUILD_OPTIONS=nocheck \
		make --no-print-directory OUT="${OUT:-build}" deb > "$deb_log" 2>&1 ) &
	deb_pid=$!
fi

start=$SECONDS before_p=$passed before_f=$failed
for t in "$@"; do
	echo "== unit: $t"
	"$t" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	count "$rc" "$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)" \
		"$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n1)"
done

unit_line="$# binaries, $((passed - before_p)) passed, $((failed - before_f)) failed, $(took $start)"
echo "== unit: $unit_line"

echo "== fuzz: short libFuzzer runs over the config parser, the HTTP/1 status-line reader, the Go probe finder and the HTTP/2 header-block reader (make fuzz for long ones)"
start=$SECONDS
if bash tests/fuzz/run.sh 15; then count 0 1 0; fuzz_line="no crash"; else count 1 0 1; fuzz_line="FAILED"; fi
fuzz_line="$fuzz_line, $(took $start)"
echo "== fuzz: $fuzz_line"

if [ -n "$deb_pid" ]; then
	if wait "$deb_pid" && [ -f "$DW_DEB_FILE" ]; then
		export DW_DEB=$DW_DEB_FILE
	else
		echo "== deb: make deb failed (test_deb builds it again and says why); its end:"
		tail -n 20 "$deb_log"
	fi
fi


# The whole integration suite once per tracing backend (DW_BACKEND makes every daemon of the run
# start with --backend), the two passes side by side (issue 45: each mostly waits, 12-19% of the
# CPUs; the tests that load the machine run alone, harness.runs_alone). Each pass's lines are
# streamed marked with its backend; its closing lines are repeated in the summary.
summary=""
ilogs=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$ilogs"' EXIT
backends=() ipids=()
for backend in sock syscalls; do
	if [ "$backend" = sock ] && ! grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux; then
		summary="$summary
   integration, backend sock: skipped, this kernel lacks the sock_send_length tracepoint (Linux 6.3+)"
		continue
	fi
	backends+=("$backend")
done
echo "== integration, backends ${backends[*]} side by side (real kernel, real sockets)"
start=$SECONDS
# The kernel stage (tests/vm/kernels.sh) in two parts: the items that assert nothing a guest kept
# off its CPU could change (its "beside" items: counts, capabilities, pins, valgrind) in one guest
# during the passes, scheduled SCHED_IDLE so that the host's tests preempt it at once; the rest
# after the passes, in two guests of one vCPU each, with the machine to themselves (issue 45:
# the whole stage beside the passes, niced, made three timing cases fail on 2026-12-06: emulation
# computes rather than waits).
kernels_intro="== kernels: the kernel-facing integration tests on other kernels, in a VM (tests/vm/kernels.sh)"
echo "$kernels_intro: its items that need no CPU of their own, beside the integration passes"
: > "$ilogs/kbeside"
{ KERNELS_PART=beside SHARDS=1 VM_TIMEOUT=${VM_TIMEOUT:-2700} chrt --idle 0 bash tests/vm/kernels.sh > "$ilogs/kbeside" 2>&1
  echo $? > "$ilogs/kbeside.rc"
  echo "$(took $start)" > "$ilogs/kbeside.end"; } &
kbeside_pid=$!
tail -n +1 -f --pid=$kbeside_pid "$ilogs/kbeside" | sed -u "s/^/[beside] /" &
# Each backend's pass as RUNNERS runners (issue 45: a runner mostly waits, 5-9% of the CPUs),
# which share its modules through a queue (tests/integration/suitelock.py, ModuleQueue: a module
# runs in the first runner to claim it). Each runner its own slice of the loopback ports
# (tests/integration/loopback.py, DW_PORT_SLICE): a port one runner released, with its daemon
# still judging or refusing it, is never another's next.
runners=${RUNNERS:-3}
nrun=$((${#backends[@]} * runners))
side=$([ "$nrun" -gt 1 ] && echo 1 || echo 0)
n=0
for backend in "${backends[@]}"; do
	: > "$ilogs/$backend.queue"
	for j in $(seq 1 "$runners"); do
		r=$backend.$j
		: > "$ilogs/$r"
		{ DW_MODULE_QUEUE=$ilogs/$backend.queue DW_PORT_SLICE=$n/$nrun DW_SIDE_BY_SIDE=$side \
			DW_BACKEND=$backend python3 tests/integration/run.py --durations 15 > "$ilogs/$r" 2>&1
		  echo $? > "$ilogs/$r.rc"
		  echo "$SECONDS" > "$ilogs/$r.end"; } &
		ipids+=($!)
		tail -n +1 -f --pid=$! "$ilogs/$r" | sed -u "s/^/[$backend $j] /" &
		n=$((n + 1))
	done
done
wait "${ipids[@]}"
integration_took=$(took $start)
for backend in "${backends[@]}"; do
	# the runners' counts added up; the pass ended with its last runner
	p=0 f=0 sk=0 rcs=0 last=$start names=""
	for j in $(seq 1 "$runners"); do
		r=$backend.$j
		cp "$ilogs/$r" "$log"
		rc=$(cat "$ilogs/$r.rc")
		line=$(closing "")
		p=$((p + $(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p' | grep . || echo 0)))
		f=$((f + $(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p' | grep . || echo 0)))
		sk=$((sk + $(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p' | grep . || echo 0)))
		if [ -z "$line" ]; then
			f=$((f + 1))
			names="$names
      failed: runner $j of the $backend pass printed no result line (exit status $rc)"
		elif [ "$rc" -ne 0 ] && ! echo "$line" | grep -q ' [1-9][0-9]* failed'; then
			f=$((f + 1))
			names="$names
      failed: runner $j of the $backend pass exited $rc with no failure counted"
		fi
		end=$(cat "$ilogs/$r.end"); [ "$end" -gt "$last" ] && last=$end
		# run.py's "failed: ID" lines, under the count
		more=$(sed -n 's/^failed: /      failed: /p' "$log")
		[ -z "$more" ] || names="$names
$more"
	done
	line="$p passed, $f failed"
	[ "$sk" -eq 0 ] || line="$line, $sk skipped"
	count 0 "$p" "$f"
	ended=$(took $((start + SECONDS - last)))
	echo "== integration, backend $backend: $line, $ended ($runners runners)"
	summary="$summary
   integration, backend $backend: $line, $ended ($runners runners)$names"
done
summary="$summary
   integration, both backends: $integration_took"

echo "$kernels_intro: the rest, after the integration passes"
start=$SECONDS
KERNELS_PART=after bash tests/vm/kernels.sh 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
line=$(closing "kernels: ")
count_line "$rc" "$line"
after_shown="${line#kernels: }"
after_shown="${after_shown:-no result line (exit status $rc)}, $(took $start)"
after_failed=$(grep '^      failed: ' "$log" || true)
# the beside part, waited for if the passes ended first
wait "$kbeside_pid"
cp "$ilogs/kbeside" "$log"
rc=$(cat "$ilogs/kbeside.rc")
line=$(closing "kernels: ")
count_line "$rc" "$line"
beside_shown="${line#kernels: }"
beside_shown="${beside_shown:-no result line (exit status $rc)}, $(cat "$ilogs/kbeside.end") from the passes' start"
beside_failed=$(grep '^      failed: ' "$log" || true)
echo "== kernels, beside the passes: $beside_shown"
echo "== kernels, after the passes: $after_shown"
echo "== stages:
   unit: $unit_line
   fuzz: $fuzz_line$summary
   kernels, beside the passes: $beside_shown${beside_failed:+
$beside_failed}
   kernels, after the passes: $after_shown${after_failed:+
$after_failed}"
echo "   all: $(took $all_start)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
