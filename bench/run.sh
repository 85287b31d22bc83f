#!/usr/bin/env bash
# `make bench`: depwatch's cost and decision speed, on loopback.
#
# 1. Interleaved A/B/C runs of a request/response workload (build/pingpong).
#    For each configuration (message size x client threads) it alternates in
#    time: A = nothing attached, B = depwatch running (a fresh daemon started
#    before and stopped after each B run), S = the same with --backend
#    syscalls (issue 7's backend for kernels before 6.3: system call
#    tracepoints instead of the socket ones), C = the bpftrace peer (bench/peer.bt:
#    the same call model on the same tracepoints, as one would write it in
#    bpftrace; a fresh bpftrace per C run), F = the floor (issue 17:
#    $OUT/floor, bench/floor.bpf.c's trivial programs, one per hook the sock
#    backend attaches per event, each bumping a per-CPU counter: the least
#    any tracer on those hooks can cost; a fresh one per F run), H = depwatch
#    (sock) with its daemon stopped (SIGSTOP) once it has started: its
#    programs attached and running, no polling, no wake-ups (SIGCONT then
#    SIGTERM after the run): B - H is the daemon's own share, H - F the
#    programs' beyond the floor. SPLIT=1 adds the configuration "split": the
#    1-byte ping-pong at 2 threads with a listener per connection
#    (pingpong --split), so the two threads (two CPUs) call two
#    destinations and no per-destination row is written from both CPUs;
#    next to the shared 1 B x 2 threads configuration it measures what the
#    rows shared between CPUs cost. Then one extra run per
#    configuration and per B/S/P/C/F with kernel.bpf_stats_enabled=1 measures each
#    BPF program's average cost per invocation; the sysctl is restored after.
#    CHURN (issue 13): the same interleaved rounds and stats run for
#    connection churn, `pingpong --churn` (a connection per call: connect,
#    one 1-byte request and answer, the server closes first, so TIME_WAIT
#    stays on the server side and SYNs from reused client ports recycle it;
#    the most TIME_WAIT sockets seen after a churn run is reported), with
#    CHURN_THREADS client threads. At ~30 000 connections/s the host's
#    TIME_WAIT table (net.ipv4.tcp_max_tw_buckets) fills within seconds and
#    the kernel then closes without TIME_WAIT (TcpExt TCPTimeWaitOverflow,
#    reported): an unmeasured churn run first brings the table to that
#    steady state, so the first measured run is not the only one with room.
#    BEFORE=/path/to/old/depwatch adds arm P: that binary (sock backend, its
#    own pin and run dirs) in the same rounds, right after B, so a change to
#    the BPF hot path is measured before/after side by side (ratios to
#    baseline and per-program ns for both). Build it from a revision without
#    touching the working tree (a temporary git worktree, removed after):
#      make OUT=build-bench bench-before BEFORE_REV=f9826fc
#    which writes build-bench/depwatch-before and build-bench/depwatch-before.id
#    (the revision, quoted in the report); or bench/build-before.sh REV DEST.
#    Then DD: interleaved A/B/S rounds (and P with BEFORE) of `dd bs=64 count=4M` from /dev/zero to
#    /dev/null (no socket at all: what each backend costs every other read
#    and write on the host), wall seconds.
#    Then H2 (issue 23): interleaved A/B/S rounds (and P with BEFORE) of
#    `h2load -n H2_REQUESTS -c H2_CLIENTS -m H2_STREAMS` against one `nghttpd
#    --no-tls` (cleartext HTTP/2 with prior knowledge, a 16-byte
#    index.html, both on 127.0.0.1, unpinned, one thread each), started
#    once for the phase; each run's requests/s, mean request time and CPU
#    (h2load's and nghttpd's user + system) per request. Then STATS_RUNS
#    runs per B/S/P with kernel.bpf_stats_enabled=1: every program's run
#    time over the run (h2load's connects included) per stream h2load
#    completed, and the streams depwatch counted (status --json) next to
#    them. Needs nghttpd and h2load (Debian nghttp2-server, nghttp2-client).
# 2. Decision speed: bench/decide.py (DECIDE_TRIALS trials, time to breaker
#    open against a completion-only breaker on the same calls; then
#    DECIDE_FAST_TRIALS with --interval 50ms for comparison).
# 3. Scale: bench/scale.py (the daemon's CPU, peak RSS and polling-pass time
#    at 1 000 destinations x 10 000 connections and 10 000 x 50 000).
#
# pingpong runs with --pin (each client thread and its server thread share a
# CPU): unpinned single-connection runs on a VM swing 2-5x from run to run
# with where the scheduler puts the two threads, which buries the effect
# measured here. PIN=0 measures unpinned.
#
# Other depwatch instances (e.g. integration tests run by someone else) would
# put their dw_ programs on every TCP event of all runs: each run first waits
# up to QUIET_WAIT seconds for there to be none (QUIET_BUDGET seconds of such
# waiting in all, to bound the whole benchmark), and the report counts the
# runs, trials and cases during which there were some anyway.
#
# Prints a Markdown report and writes it to bench/RESULTS.md (BENCH_QUICK=1:
# a short smoke run, written to $OUT/bench-quick.md instead). Needs root.
# Knobs (environment): PAIRS (default 7), RUN_SECONDS (default 3), WARMUP_MS
# (default 300), PIN (default 1), QUIET_WAIT (default 5), QUIET_BUDGET
# (default 90), SIZES (default "1 4096": the ping-pong message sizes, each
# with 1 and 2 threads; SIZES="": no ping-pong, churn only), CHURN (default
# 1; 0: no churn configuration), CHURN_THREADS (default 2), BEFORE (default
# none: the old depwatch binary of arm P, or an experiment variant from
# `make bench-variant VARIANT=percpu`), BEFORE_LABEL (default "depwatch
# before": arm P's name in the report), RESULTS (where the report goes), PEER (default 1;
# 0: no bpftrace arm), SYSCALLS (default 1; 0:
# no syscalls-backend arm), DD (default 1; 0: no dd arm), DECIDE_TRIALS (default
# 20; 0: skip), DECIDE_FAST_TRIALS (default 10: trials with --interval 50ms;
# 0: skip), SCALE (default 1; 0: skip), SCALE_CASES (see scale.py), FLOOR
# (default 1; 0: no floor arm), HALTED (default 1; 0: no daemon-stopped
# arm), SPLIT (default 1; 0: no "split" configuration), H2 (default 1; 0: no
# HTTP/2 arm), H2_REQUESTS (default 400000, BENCH_QUICK=1: 40000: requests per
# h2load run, ~2.5 s at this VM's ~170 000 req/s baseline, longer with depwatch),
# H2_CLIENTS (default 2: h2load -c), H2_STREAMS (default 10: h2load -m),
# H2_PORT (default 18480: nghttpd's port), STATS_RUNS (default
# 1: BPF-statistics runs per configuration and arm, the arms alternating;
# the cost of a line two CPUs write moves with where the hypervisor puts the
# vCPUs, so one run can be a lucky one), POOL (default 1: bench/pool.py, the
# worker pool with depwatch off / connect / abort; 0: skip), REPLICAS
# (default 1: bench/replicas.py, the same pool against three replicas, one
# going slow, with depwatch off / eject = on / the breaker alone; 0: skip),
# BENCH_QUICK (default 0; 1: PAIRS=1, RUN_SECONDS=1, WARMUP_MS=100,
# DECIDE_TRIALS=2, DECIDE_FAST_TRIALS=0, QUIET_WAIT=1, QUIET_BUDGET=10,
# H2_REQUESTS=40000, scale.py --quick).
#
# Issue 13's run (1-byte ping-pong at 1 and 2 threads, and churn; baseline,
# depwatch sock, the old binary, depwatch syscalls, bpftrace; 3 configurations
# x 7 rounds x 5 arms + 12 stats runs + 1 churn warm-up = 118 runs of 3.3 s
# plus ~2.3 s (quiet) to ~3.7 s (busy) of daemon or bpftrace start and stop
# each: about 11 minutes quiet, up to 15 busy, plus up to QUIET_BUDGET):
#   make OUT=build-bench bench-before BEFORE_REV=f9826fc     # ~10 s
#   SIZES=1 DD=0 DECIDE_TRIALS=0 DECIDE_FAST_TRIALS=0 SCALE=0 \
#     BEFORE=build-bench/depwatch-before make OUT=build-bench bench
# (RESULTS=... to keep bench/RESULTS.md of a full run.) Its one-round smoke
# form, the same with BENCH_QUICK=1 PAIRS=1 RUN_SECONDS=3 WARMUP_MS=300
# QUIET_WAIT=5 QUIET_BUDGET=90, took 285 s on a busy machine (90 s of it
# waiting for other dw_ programs).
# Issue 17's run (the floor; on a quiet machine): every ping-pong
# configuration (1 B and 4 KiB, 1 and 2 threads), split and churn; arms A F
# B H P S C, P being depwatch before its per-CPU rows (1448099; or the
# percpu variant, bench/variants/percpu.patch: what the rows leave shared);
# no dd, decide or scale (issue 13's figures stand for those):
#   make OUT=build-bench bench-before BEFORE_REV=1448099
#   DD=0 DECIDE_TRIALS=0 DECIDE_FAST_TRIALS=0 SCALE=0 STATS_RUNS=3 \
#     BEFORE=build-bench/depwatch-before BEFORE_LABEL="depwatch before per-CPU rows (1448099)" \
#     RESULTS=bench/RESULTS-issue17.md make OUT=build-bench bench
# 6 configurations x 7 rounds x 7 arms = 294 runs of 3.3 s plus ~1-3 s of
# start and stop each (bpftrace's more), 90 stats runs, 1 churn warm-up:
# about 35 minutes quiet. Its one-round smoke form, the same with
# BENCH_QUICK=1 in front, took 164 s busy with SIZES=1 (4 configurations).
# Nothing here asserts on timing: the numbers are reported, never judged.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-build}
BENCH_QUICK=${BENCH_QUICK:-0}
# defaults: full run, then BENCH_QUICK=1's
declare -A DEFAULTS=([PAIRS]=7 [RUN_SECONDS]=3 [WARMUP_MS]=300 [DECIDE_TRIALS]=20 [DECIDE_FAST_TRIALS]=10
	[QUIET_WAIT]=5 [QUIET_BUDGET]=90 [H2_REQUESTS]=400000)
[ "$BENCH_QUICK" != 1 ] ||
	DEFAULTS=([PAIRS]=1 [RUN_SECONDS]=1 [WARMUP_MS]=100 [DECIDE_TRIALS]=2 [DECIDE_FAST_TRIALS]=0
		[QUIET_WAIT]=1 [QUIET_BUDGET]=10 [H2_REQUESTS]=40000)
PAIRS=${PAIRS:-${DEFAULTS[PAIRS]}}
RUN_SECONDS=${RUN_SECONDS:-${DEFAULTS[RUN_SECONDS]}}
WARMUP_MS=${WARMUP_MS:-${DEFAULTS[WARMUP_MS]}}
DECIDE_TRIALS=${DECIDE_TRIALS:-${DEFAULTS[DECIDE_TRIALS]}}
DECIDE_FAST_TRIALS=${DECIDE_FAST_TRIALS:-${DEFAULTS[DECIDE_FAST_TRIALS]}}
QUIET_WAIT=${QUIET_WAIT:-${DEFAULTS[QUIET_WAIT]}}
QUIET_BUDGET=${QUIET_BUDGET:-${DEFAULTS[QUIET_BUDGET]}}
H2_REQUESTS=${H2_REQUESTS:-${DEFAULTS[H2_REQUESTS]}}
PIN=${PIN:-1}
PEER=${PEER:-1}
SYSCALLS=${SYSCALLS:-1}
FLOOR=${FLOOR:-1}
HALTED=${HALTED:-1}
SPLIT=${SPLIT:-1}
STATS_RUNS=${STATS_RUNS:-1}
DD=${DD:-1}
DD_COUNT=4194304
H2=${H2:-1}
H2_CLIENTS=${H2_CLIENTS:-2}
H2_STREAMS=${H2_STREAMS:-10}
H2_PORT=${H2_PORT:-18480}
ATTACHED_sock="not run"
ATTACHED_syscalls="not run"
ATTACHED_before="not run"
ATTACHED_floor="not run"
SCALE=${SCALE:-1}
POOL=${POOL:-1}
REPLICAS=${REPLICAS:-1}
SIZES=${SIZES-1 4096}
CHURN=${CHURN:-1}
CHURN_THREADS=${CHURN_THREADS:-2}
BEFORE=${BEFORE:-}
BEFORE_LABEL=${BEFORE_LABEL:-depwatch before}	# arm P's name in the report (a variant's)
DEPWATCH_BEFORE=""
BEFORE_ID="not run"
CONFIGS=()	# "workload size threads"
for size in $SIZES; do
	CONFIGS+=("pingpong $size 1" "pingpong $size 2")
done
[ "$SPLIT" != 1 ] || CONFIGS+=("split 1 2")
[ "$CHURN" != 1 ] || CONFIGS+=("churn 1 $CHURN_THREADS")
TW_MAX=0	# the most TIME_WAIT sockets seen after a churn run
TW_OVERFLOW=0	# TcpExt TCPTimeWaitOverflow over the churn configurations
PIN_DIR=/sys/fs/bpf/dwbench
RUN_DIR=/tmp/dwbench
PINGPONG=$OUT/pingpong
DEPWATCH=$OUT/depwatch
FLOOR_BIN=$OUT/floor
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
BPFTRACE=${BPFTRACE:-$(command -v bpftrace || echo /usr/bin/bpftrace)}
NGHTTPD=${NGHTTPD:-$(command -v nghttpd || echo /usr/sbin/nghttpd)}
H2LOAD=${H2LOAD:-$(command -v h2load || echo /usr/bin/h2load)}
PEER_BT=bench/peer.bt
RESULTS_DEFAULT=bench/RESULTS.md
[ "$BENCH_QUICK" != 1 ] || RESULTS_DEFAULT=$OUT/bench-quick.md
RESULTS=${RESULTS:-$RESULTS_DEFAULT}

work=$(mktemp -d /tmp/dwbench-run.XXXXXX)
daemon_pid=""
peer_pid=""
floor_pid=""
nghttpd_pid=""
stats_orig=""
quiet_left=$((QUIET_BUDGET * 4))	# quarter seconds of waiting left

die() {
	echo "bench: $*" >&2
	exit 1
}

# Stops a child: signal $2, up to $3 tenths of a second for it to exit, then
# SIGKILL. $4 names it in messages. Returns its exit status (0 if unknown).
stop_child() {
	local pid=$1 sig=$2 tenths=$3 name=$4 i rc=0

	kill -"$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < tenths; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "bench: $name (pid $pid) ignored SIG$sig for $((tenths / 10)) s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

# Stops the daemon: SIGTERM, up to 5 s for a clean exit, then SIGKILL.
daemon_stop() {
	local pid=$daemon_pid rc=0

	[ -n "$pid" ] || return 0
	daemon_pid=""
	kill -CONT "$pid" 2>/dev/null || true	# arm H stopped it
	stop_child "$pid" TERM 50 depwatch || rc=$?
	[ "$rc" -eq 0 ] || echo "bench: depwatch exited with status $rc" >&2
	return 0
}

stats_restore() {
	[ -n "$stats_orig" ] || return 0
	sysctl -q -w kernel.bpf_stats_enabled="$stats_orig" >/dev/null || true
}

# Stops the bpftrace peer: SIGINT (it prints its maps and detaches), up to 10 s, then SIGKILL.
peer_stop() {
	local pid=$peer_pid

	[ -n "$pid" ] || return 0
	peer_pid=""
	stop_child "$pid" INT 100 bpftrace || true
	return 0
}

# Stops the floor: SIGTERM (it detaches and prints its counts), up to 5 s, then SIGKILL.
floor_stop() {
	local pid=$floor_pid

	[ -n "$pid" ] || return 0
	floor_pid=""
	stop_child "$pid" TERM 50 floor || true
	return 0
}

# Stops nghttpd (the HTTP/2 phase's server): SIGTERM, up to 5 s, then SIGKILL.
nghttpd_stop() {
	local pid=$nghttpd_pid

	[ -n "$pid" ] || return 0
	nghttpd_pid=""
	stop_child "$pid" TERM 50 nghttpd || true
	return 0
}

# shellcheck disable=SC2317  # the EXIT trap's (shellcheck 0.9 misses it after main's exit)
cleanup() {
	daemon_stop
	peer_stop
	floor_stop
	nghttpd_stop
	stats_restore
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# Starts depwatch and waits (up to 10 s) for its "started" line, which names
# its pid: the log is truncated here, not in the child, so a previous run's
# line cannot be taken for this one's.
# $1: the backend (sock, syscalls); the hooks it attached go to ATTACHED_<backend>.
# $2 (optional): "before": BEFORE's binary, in its own pin and run dirs (its
# pinned maps may differ), its hooks to ATTACHED_before.
daemon_start() {
	local backend=$1 log=$work/daemon.log i bin=$DEPWATCH pin=$PIN_DIR run=$RUN_DIR slot=$1

	if [ "${2:-}" = before ]; then
		bin=$DEPWATCH_BEFORE pin=$PIN_DIR-before run=$RUN_DIR-before slot=before
	fi
	: >"$log"
	"$bin" run --backend "$backend" --pin-dir "$pin" --run-dir "$run" >>"$log" 2>&1 &
	daemon_pid=$!
	for ((i = 0; i < 100; i++)); do
		if grep -q "^depwatch: started (.*pid $daemon_pid," "$log"; then
			printf -v "ATTACHED_$slot" '%s' \
				"$(sed -n 's/^depwatch: started (.*); attached: /attached: /p' "$log")"
			return 0
		fi
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	daemon_stop
	die "depwatch did not start (log above)"
}

# Starts bench/peer.bt and waits (up to 60 s: bpftrace compiles the script
# first) until all its tracepoints are attached, as `bpftool perf list` shows.
peer_start() {
	local log=$work/peer.log i n want

	want=$(grep -c '^tracepoint:' "$PEER_BT")
	: >"$log"
	"$BPFTRACE" "$PEER_BT" >>"$log" 2>&1 &
	peer_pid=$!
	for ((i = 0; i < 300; i++)); do
		n=$("$BPFTOOL" perf list 2>/dev/null |
			awk -v p="$peer_pid" '$1 == "pid" && $2 == p && $7 == "tracepoint"' | wc -l)
		[ "$n" -lt "$want" ] || return 0
		kill -0 "$peer_pid" 2>/dev/null || break
		sleep 0.2
	done
	cat "$log" >&2
	peer_stop
	die "bpftrace did not attach $want tracepoints (log above)"
}

# Starts the floor ($FLOOR_BIN) and waits (up to 10 s) for its ready line.
floor_start() {
	local log=$work/floor.log i

	: >"$log"
	"$FLOOR_BIN" >>"$log" 2>&1 &
	floor_pid=$!
	for ((i = 0; i < 100; i++)); do
		if grep -q "^floor: ready (pid $floor_pid)" "$log"; then
			ATTACHED_floor=$(sed -n 's/^floor: ready (pid [0-9]*); attached: /attached: /p' "$log")
			return 0
		fi
		kill -0 "$floor_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	floor_stop
	die "the floor did not start (log above)"
}

# The BPF program ids a process holds, from its file descriptors.
prog_ids_of() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un
}

# How many dw_ programs are loaded other than the given ids (ours). Runs
# twice per run: bpftool's plain output and awk, as python's start-up alone
# takes ~0.5 s on a loaded 2-core machine.
foreign_dw_progs() {
	"$BPFTOOL" prog show 2>/dev/null | awk -v ours=" $* " '
		/^[0-9]+:/ {
			id = substr($1, 1, length($1) - 1)
			for (i = 2; i < NF; i++)
				if ($i == "name" && $(i + 1) ~ /^dw_/ && !index(ours, " " id " "))
					n++
		}
		END { print n + 0 }'
}

# Waits up to QUIET_WAIT seconds (and what is left of QUIET_BUDGET) for no
# foreign dw_ programs; leaves how many remain in $quiet. Not in a subshell:
# it spends the budget.
wait_quiet() {
	local i

	for ((i = 0; i < QUIET_WAIT * 4 && quiet_left > 0; i++)); do
		quiet=$(foreign_dw_progs)
		[ "$quiet" -ne 0 ] || return 0
		sleep 0.25
		quiet_left=$((quiet_left - 1))
	done
	quiet=$(foreign_dw_progs)
}

# Writes "id name run_time_ns run_cnt" for the given ids to $1. A program
# attached to a tracepoint through perf by bpftrace is named "bt:" and the
# tracepoint, as bpftrace's own names are cut to 15 characters.
bpf_snapshot() {
	local file=$1
	shift
	"$BPFTOOL" perf list 2>/dev/null | awk '$7 == "tracepoint" {print $6, $8}' >"$work/perf.names"
	"$BPFTOOL" prog show --json | python3 -c '
import json, sys
ids = {int(i) for i in sys.argv[2:]}
names = dict(line.split() for line in open(sys.argv[1]) if line.strip())
for p in json.load(sys.stdin):
	if p["id"] in ids:
		# depwatch attaches its syscalls programs through perf too, one program to many tracepoints
		name = p.get("name", "?")
		if not name.startswith("dw_") and str(p["id"]) in names:
			name = "bt:" + names[str(p["id"])]
		print(p["id"], name, p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$work/perf.names" "$@" |
		LC_ALL=C sort >"$file"
}

# Runs pingpong once ($1: pingpong or churn); prints its result line, which
# must have all six fields. After a churn run, TW_MAX keeps the most TIME_WAIT
# sockets seen (not in a subshell, then: the result goes to $line).
pingpong() {
	local workload=$1 size=$2 threads=$3 warmup=$4 pin=() churn=() n='[0-9.]+' tw

	[ "$PIN" = 0 ] || pin=(--pin)
	[ "$workload" != churn ] || churn=(--churn)
	[ "$workload" != split ] || churn=(--split)
	line=$("$PINGPONG" --size "$size" --threads "$threads" --seconds "$RUN_SECONDS" \
		--warmup-ms "$warmup" --cpu "${pin[@]}" "${churn[@]}") ||
		die "pingpong failed ($workload, size $size, threads $threads)"
	[[ $line =~ ^calls=$n\ seconds=$n\ calls_per_s=$n\ p50_us=$n\ p99_us=$n\ cpu_us_per_call=$n$ ]] ||
		die "unexpected pingpong output: $line"
	if [ "$workload" = churn ]; then
		tw=$(awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "tw") print $(i + 1) }' \
			/proc/net/sockstat)
		[ "${tw:-0}" -le "$TW_MAX" ] || TW_MAX=$tw
	fi
}

mode_name() {
	case $1 in
	A) echo baseline ;;
	B) echo depwatch ;;
	S) echo depwatch-syscalls ;;
	C) echo bpftrace ;;
	P) echo depwatch-before ;;
	F) echo floor ;;
	H) echo depwatch-halted ;;
	esac
}

# Starts what a mode runs (nothing for A); sets $ids to its BPF program ids.
arm_start() {
	ids=""
	case $1 in
	B | S)
		daemon_start "$([ "$1" = B ] && echo sock || echo syscalls)"
		ids=$(prog_ids_of "$daemon_pid")
		;;
	H)
		daemon_start sock
		ids=$(prog_ids_of "$daemon_pid")
		# started: programs attached, adoption done; from here on no polling
		kill -STOP "$daemon_pid"
		;;
	F)
		floor_start
		ids=$(prog_ids_of "$floor_pid")
		;;
	P)
		daemon_start sock before
		ids=$(prog_ids_of "$daemon_pid")
		;;
	C)
		peer_start
		ids=$(prog_ids_of "$peer_pid")
		;;
	esac
}

arm_stop() {
	daemon_stop
	peer_stop
	floor_stop
}

# One run; appends "workload size threads pair mode foreign calls seconds
# calls_per_s p50 p99 cpu_us_per_call" to runs.tsv, foreign being the most dw_
# programs of others seen before or after the run.
one_run() {
	local workload=$1 size=$2 threads=$3 pair=$4 mode=$5 line ids="" f0 f1

	wait_quiet
	f0=$quiet
	arm_start "$mode"
	pingpong "$workload" "$size" "$threads" "$WARMUP_MS"
	# shellcheck disable=SC2086
	f1=$(foreign_dw_progs $ids)
	arm_stop
	printf '  %-8s size=%-5s threads=%s pair=%s %-8s  %s%s\n' "$workload" "$size" "$threads" "$pair" \
		"$(mode_name "$mode")" "$line" \
		"$([ $((f0 + f1)) -eq 0 ] || echo "  (other dw_ programs: $f0 before, $f1 after)")" >&2
	# shellcheck disable=SC2001
	echo "$workload $size $threads $pair $mode $((f0 > f1 ? f0 : f1))" \
		"$(sed 's/[a-z0-9_]*=//g' <<<"$line")" >>"$work/runs.tsv"
}

# With depwatch (B) or the peer (C) running and BPF stats on: per-program
# deltas over one pingpong run, appended to stats.tsv as "mode workload size
# threads prog run_time_ns run_cnt calls foreign run", run being $5 (1 to
# STATS_RUNS).
stats_run() {
	local workload=$1 size=$2 threads=$3 mode=$4 run=$5 line ids calls f0 f1

	wait_quiet
	f0=$quiet
	arm_start "$mode"
	[ -n "$ids" ] || die "cannot find the BPF programs of the $(mode_name "$mode") run"
	sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
	# shellcheck disable=SC2086
	bpf_snapshot "$work/before" $ids
	pingpong "$workload" "$size" "$threads" 0
	# shellcheck disable=SC2086
	bpf_snapshot "$work/after" $ids
	stats_restore
	# shellcheck disable=SC2086
	f1=$(foreign_dw_progs $ids)
	arm_stop
	echo "  $workload size=$size threads=$threads $(mode_name "$mode") stats run $run: $line" >&2
	calls=${line%% *}
	LC_ALL=C join "$work/before" "$work/after" | while read -r _ name t0 c0 _ t1 c1; do
		echo "$mode $workload $size $threads $name $((t1 - t0)) $((c1 - c0)) ${calls#calls=} $((f0 > f1 ? f0 : f1)) $run"
	done >>"$work/stats.tsv"
}

preflight() {
	[ "$(id -u)" -eq 0 ] || die "needs root (loads BPF programs)"
	[ -x "$PINGPONG" ] || die "build first: make $PINGPONG"
	[ -x "$DEPWATCH" ] || die "build first: make $DEPWATCH"
	[ "$FLOOR" != 1 ] || [ -x "$FLOOR_BIN" ] || die "build first: make $FLOOR_BIN"
	[ -z "$BEFORE" ] || [ -x "$BEFORE" ] ||
		die "BEFORE=$BEFORE is not an executable (make OUT=$OUT bench-before BEFORE_REV=...)"
	[ -x "$BPFTOOL" ] || die "bpftool not found"
	[ -r /proc/sys/kernel/bpf_stats_enabled ] || die "no kernel.bpf_stats_enabled sysctl"
	if [ "$PEER" = 1 ] && ! [ -x "$BPFTRACE" ]; then
		echo "bench: bpftrace not found (make deps installs it): no bpftrace arm" >&2
		PEER=0
	fi
	if [ "$H2" = 1 ] && ! { [ -x "$NGHTTPD" ] && [ -x "$H2LOAD" ]; }; then
		echo "bench: nghttpd or h2load not found (Debian nghttp2-server, nghttp2-client): no HTTP/2 arm" >&2
		H2=0
	fi
	mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	stats_orig=$(cat /proc/sys/kernel/bpf_stats_enabled)
	# A private copy (the skeleton carries the BPF object): a concurrent `make`
	# replacing build/depwatch mid-benchmark must not change what B runs run.
	cp "$DEPWATCH" "$work/depwatch"
	DEPWATCH=$work/depwatch
	if [ "$FLOOR" = 1 ]; then
		cp "$FLOOR_BIN" "$work/floor"
		FLOOR_BIN=$work/floor
	fi
	if [ -n "$BEFORE" ]; then
		cp "$BEFORE" "$work/depwatch-before"
		DEPWATCH_BEFORE=$work/depwatch-before
		BEFORE_ID="$BEFORE ($(sha256sum "$BEFORE" | cut -c1-12))"
		[ ! -r "$BEFORE.id" ] || BEFORE_ID+=", $(head -n1 "$BEFORE.id")"
	fi
	SOURCE_ID=$(source_id)
	: >"$work/runs.tsv"
	: >"$work/stats.tsv"
	: >"$work/dd.tsv"
	: >"$work/h2.tsv"
	: >"$work/h2stats.tsv"
	: >"$work/decide.json"
	: >"$work/decide-fast.json"
	: >"$work/scale.json"
}

# The exact command, with any knob that differs from its default.
command_line() {
	local env="" k

	[ "$BENCH_QUICK" = 0 ] || env+="BENCH_QUICK=$BENCH_QUICK "
	for k in PAIRS RUN_SECONDS WARMUP_MS DECIDE_TRIALS DECIDE_FAST_TRIALS QUIET_WAIT QUIET_BUDGET H2_REQUESTS; do
		[ "${!k}" = "${DEFAULTS[$k]}" ] || env+="$k=${!k} "
	done
	[ "$PIN" = 1 ] || env+="PIN=$PIN "
	[ "$PEER" = 1 ] || env+="PEER=$PEER "
	[ "$SYSCALLS" = 1 ] || env+="SYSCALLS=$SYSCALLS "
	[ "$FLOOR" = 1 ] || env+="FLOOR=$FLOOR "
	[ "$HALTED" = 1 ] || env+="HALTED=$HALTED "
	[ "$SPLIT" = 1 ] || env+="SPLIT=$SPLIT "
	[ "$STATS_RUNS" = 1 ] || env+="STATS_RUNS=$STATS_RUNS "
	[ "$SIZES" = "1 4096" ] || env+="SIZES=\"$SIZES\" "
	[ "$CHURN" = 1 ] || env+="CHURN=$CHURN "
	[ "$CHURN_THREADS" = 2 ] || env+="CHURN_THREADS=$CHURN_THREADS "
	[ -z "$BEFORE" ] || env+="BEFORE=$BEFORE "
	[ "$BEFORE_LABEL" = "depwatch before" ] || env+="BEFORE_LABEL=\"$BEFORE_LABEL\" "
	[ "$RESULTS" = "$RESULTS_DEFAULT" ] || env+="RESULTS=$RESULTS "
	[ "$DD" = 1 ] || env+="DD=$DD "
	[ "$H2" = 1 ] || env+="H2=$H2 "
	[ "$H2_CLIENTS" = 2 ] || env+="H2_CLIENTS=$H2_CLIENTS "
	[ "$H2_STREAMS" = 10 ] || env+="H2_STREAMS=$H2_STREAMS "
	[ "$H2_PORT" = 18480 ] || env+="H2_PORT=$H2_PORT "
	[ "$REPLICAS" = 1 ] || env+="REPLICAS=$REPLICAS "
	[ "$SCALE" = 1 ] || env+="SCALE=$SCALE "
	[ -z "${SCALE_CASES:-}" ] || env+="SCALE_CASES=$SCALE_CASES "
	if [ -n "${MAKELEVEL:-}" ]; then
		echo "${env}make bench"
	else	# run directly: make bench's recipe, on what $OUT already held
		echo "${env}OUT=$OUT bash bench/run.sh"
	fi
}

# The commit built, and whether bpf/ or user/ had changes not committed.
source_id() {
	local head dirty

	head=$(git rev-parse --short HEAD 2>/dev/null) || return 0
	dirty=$(git status --porcelain -- bpf user 2>/dev/null | wc -l)
	echo ", from commit $head$([ "$dirty" -eq 0 ] || echo " + $dirty uncommitted file(s) in bpf/ user/")"
}

# What the machine is, in one line.
machine() {
	local cpu mem virt

	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
	mem=$(awk '/^MemTotal:/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
	virt=$(systemd-detect-virt 2>/dev/null || echo unknown)
	! grep -qw hypervisor /proc/cpuinfo || virt+=", on a hypervisor (cpuinfo flag)"
	echo "$cpu, $(nproc) cores, $mem RAM; virtualization: $virt;" \
		"$(sed -n 's/^PRETTY_NAME="\(.*\)"$/\1/p' /etc/os-release) (Debian $(cat /etc/debian_version));" \
		"kernel $(uname -r)"
}

# A TcpExt counter of /proc/net/netstat.
tcpext() {
	awk -v k="$1" '$1 == "TcpExt:" { if (!h) { split($0, n); h = 1 } else
		for (i = 2; i <= NF; i++) if (n[i] == k) print $i }' /proc/net/netstat
}

pingpong_phase() {
	local cfg workload size threads pair mode modes=(A)

	[ "$FLOOR" = 1 ] && modes+=(F)
	modes+=(B)
	[ "$HALTED" = 1 ] && modes+=(H)
	[ -n "$BEFORE" ] && modes+=(P)
	[ "$SYSCALLS" = 1 ] && modes+=(S)
	[ "$PEER" = 1 ] && modes+=(C)
	echo "bench: $PAIRS interleaved rounds (${modes[*]}) x ${#CONFIGS[@]} configs, ${RUN_SECONDS}s" \
		"per run (+${WARMUP_MS}ms warm-up), PIN=$PIN; A = baseline, F = floor, B = depwatch (sock)," \
		"H = depwatch, daemon stopped, P = depwatch before (BEFORE, sock), S = depwatch (syscalls)," \
		"C = bpftrace peer" >&2
	for cfg in "${CONFIGS[@]}"; do
		read -r workload size threads <<<"$cfg"
		if [ "$workload" = churn ]; then
			local line ov0
			ov0=$(tcpext TCPTimeWaitOverflow)
			pingpong churn "$size" "$threads" 0
			echo "  churn warm-up (not counted; TIME_WAIT table to its steady state): $line" >&2
		fi
		for ((pair = 1; pair <= PAIRS; pair++)); do
			for mode in "${modes[@]}"; do
				one_run "$workload" "$size" "$threads" "$pair" "$mode"
			done
		done
		for ((k = 1; k <= STATS_RUNS; k++)); do
			for mode in "${modes[@]:1}"; do
				# H runs B's programs: its stats would be B's
				[ "$mode" = H ] || stats_run "$workload" "$size" "$threads" "$mode" "$k"
			done
		done
		[ "$workload" != churn ] || TW_OVERFLOW=$((TW_OVERFLOW + $(tcpext TCPTimeWaitOverflow) - ov0))
	done
	[ "$CHURN" != 1 ] || echo "bench: at most $TW_MAX TIME_WAIT sockets after a churn run;" \
		"$TW_OVERFLOW closes without TIME_WAIT (TCPTimeWaitOverflow)" >&2
}

# What each backend costs I/O that is not on a socket: the syscalls backend's
# entry and exit programs run on every read and write of every process.
# Appends "pair mode foreign seconds" to dd.tsv.
dd_phase() {
	local pair mode modes=(A B) ids t0 t1 f0 f1

	[ "$DD" = 1 ] || return 0
	[ -n "$BEFORE" ] && modes+=(P)
	[ "$SYSCALLS" = 1 ] && modes+=(S)
	echo "bench: dd bs=64 count=$DD_COUNT /dev/zero -> /dev/null, $PAIRS interleaved rounds (${modes[*]})" >&2
	for ((pair = 1; pair <= PAIRS; pair++)); do
		for mode in "${modes[@]}"; do
			wait_quiet
			f0=$quiet
			arm_start "$mode"
			t0=$(date +%s.%N)
			dd if=/dev/zero of=/dev/null bs=64 count="$DD_COUNT" status=none
			t1=$(date +%s.%N)
			# shellcheck disable=SC2086
			f1=$(foreign_dw_progs $ids)
			arm_stop
			t1=$(echo "$t1 - $t0" | bc -l)
			echo "  dd pair=$pair $(mode_name "$mode"): ${t1} s" >&2
			echo "$pair $mode $((f0 > f1 ? f0 : f1)) $t1" >>"$work/dd.tsv"
		done
	done
}

# Starts nghttpd (cleartext HTTP/2 with prior knowledge, 127.0.0.1:H2_PORT, a
# 16-byte index.html) for the HTTP/2 phase and waits (up to 10 s) for it to
# answer one request.
nghttpd_start() {
	local doc=$work/h2doc i

	mkdir -p "$doc"
	printf 'hello, depwatch\n' >"$doc/index.html"
	! ss -Hltn "sport = :$H2_PORT" 2>/dev/null | grep -q . ||
		die "port $H2_PORT is in use: H2_PORT=another make bench"
	"$NGHTTPD" --no-tls --address=127.0.0.1 -d "$doc" "$H2_PORT" >"$work/nghttpd.log" 2>&1 &
	nghttpd_pid=$!
	for ((i = 0; i < 100; i++)); do
		! "$H2LOAD" -n 1 -c 1 "http://127.0.0.1:$H2_PORT/index.html" 2>/dev/null |
			grep -q ' 1 succeeded' || return 0
		kill -0 "$nghttpd_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$work/nghttpd.log" >&2
	nghttpd_stop
	die "nghttpd did not answer on port $H2_PORT (log above)"
}

# A process's user + system CPU time so far, in clock ticks.
cpu_ticks() {
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/"$1"/stat
}

# One h2load run against nghttpd; sets $h2line to "req_per_s done succeeded
# failed mean_request_us cpu_us_per_request", the CPU being h2load's and
# nghttpd's user + system time over the run (not in a subshell, then).
h2load_run() {
	local out n0 n1 hz

	hz=$(getconf CLK_TCK)
	n0=$(cpu_ticks "$nghttpd_pid")
	# the subshell's children's times (`times`' second line) are h2load's
	out=$({ "$H2LOAD" -n "$H2_REQUESTS" -c "$H2_CLIENTS" -m "$H2_STREAMS" \
		"http://127.0.0.1:$H2_PORT/index.html" && times; } 2>&1) ||
		die "h2load failed: $out"
	n1=$(cpu_ticks "$nghttpd_pid")
	h2line=$(awk -v ncpu="$(((n1 - n0) * 1000000 / hz))" '
		function us(v) {	# h2load durations: 41us, 5.67ms, 1.2s
			if (v ~ /us$/) return v + 0
			if (v ~ /ms$/) return v * 1000
			return v * 1000000
		}
		function sec(v) {	# times: 0m1.234s
			split(v, a, "m")
			return a[1] * 60 + a[2]
		}
		/^finished in / { rps = $4 }
		/^requests: / { done = $6; ok = $8; failed = $10 + $12 + $14 }
		/^time for request:/ { mean = us($6) }
		/^[0-9]+m[0-9.]+s [0-9]+m[0-9.]+s$/ { cpu = (sec($1) + sec($2)) * 1000000 }
		END {
			if (done + 0 <= 0 || rps == "") exit 1
			printf "%s %d %d %d %.1f %.2f\n", rps, done, ok, failed, mean, (cpu + ncpu) / done
		}' <<<"$out") || die "unexpected h2load output: $out"
}

# The streams the arm's daemon counted to nghttpd's port, as "outbound/inbound"
# (status --json: the destination's streams, the inbound row's requests); "-"
# for a build without the stream layer. The daemon polls every 250 ms: its
# figures are read after two polls.
h2_counted() {
	local bin=$DEPWATCH run=$RUN_DIR

	[ "$1" != P ] || bin=$DEPWATCH_BEFORE run=$RUN_DIR-before
	sleep 0.6
	"$bin" status --json --run-dir "$run" 2>/dev/null | python3 -c '
import json, sys
port = int(sys.argv[1])
try:
	d = json.load(sys.stdin)
except ValueError:
	print("?")
	sys.exit()
out = [x.get("streams") for x in d.get("destinations", []) if x.get("dest") == "127.0.0.1:%d" % port]
inb = [x.get("requests") for x in d.get("inbound", []) if x.get("port") == port]
if not out or out[0] is None:
	print("-")
else:
	print("%d/%d" % (out[0], inb[0] if inb else 0))' "$H2_PORT" || echo "?"
}

# One measured HTTP/2 run: appends "pair mode foreign req_per_s done succeeded failed
# mean_us cpu_us_per_req" to h2.tsv.
h2_one_run() {
	local pair=$1 mode=$2 ids="" f0 f1

	wait_quiet
	f0=$quiet
	arm_start "$mode"
	h2load_run
	# shellcheck disable=SC2086
	f1=$(foreign_dw_progs $ids)
	arm_stop
	printf '  h2 pair=%s %-18s %s%s\n' "$pair" "$(mode_name "$mode")" "$h2line" \
		"$([ $((f0 + f1)) -eq 0 ] || echo "  (other dw_ programs: $f0 before, $f1 after)")" >&2
	echo "$pair $mode $((f0 > f1 ? f0 : f1)) $h2line" >>"$work/h2.tsv"
}

# With an arm running and BPF stats on: per-program deltas over one h2load run,
# appended to h2stats.tsv as "mode prog run_time_ns run_cnt streams foreign run counted",
# streams being h2load's completed requests and counted h2_counted's.
h2_stats_run() {
	local mode=$1 run=$2 ids f0 f1 counted nreq

	wait_quiet
	f0=$quiet
	arm_start "$mode"
	[ -n "$ids" ] || die "cannot find the BPF programs of the $(mode_name "$mode") run"
	sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
	# shellcheck disable=SC2086
	bpf_snapshot "$work/before" $ids
	h2load_run
	# shellcheck disable=SC2086
	bpf_snapshot "$work/after" $ids
	stats_restore
	counted=$(h2_counted "$mode")
	# shellcheck disable=SC2086
	f1=$(foreign_dw_progs $ids)
	arm_stop
	echo "  h2 $(mode_name "$mode") stats run $run: $h2line; depwatch counted $counted" >&2
	read -r _ nreq _ <<<"$h2line"
	LC_ALL=C join "$work/before" "$work/after" | while read -r _ name t0 c0 _ t1 c1; do
		echo "$mode $name $((t1 - t0)) $((c1 - c0)) $nreq $((f0 > f1 ? f0 : f1)) $run $counted"
	done >>"$work/h2stats.tsv"
}

# Issue 23: HTTP/2 streams, h2load -m against nghttpd on loopback, the arms interleaved.
h2_phase() {
	local pair mode k modes=(A B)

	[ "$H2" = 1 ] || return 0
	[ -n "$BEFORE" ] && modes+=(P)
	[ "$SYSCALLS" = 1 ] && modes+=(S)
	echo "bench: HTTP/2, h2load -n $H2_REQUESTS -c $H2_CLIENTS -m $H2_STREAMS against nghttpd" \
		"--no-tls, $PAIRS interleaved rounds (${modes[*]}), then $STATS_RUNS BPF-statistics run(s) per arm" >&2
	nghttpd_start
	h2load_run
	echo "  h2 warm-up (not counted): $h2line" >&2
	for ((pair = 1; pair <= PAIRS; pair++)); do
		for mode in "${modes[@]}"; do
			h2_one_run "$pair" "$mode"
		done
	done
	for ((k = 1; k <= STATS_RUNS; k++)); do
		for mode in "${modes[@]:1}"; do
			h2_stats_run "$mode" "$k"
		done
	done
	nghttpd_stop
}

# The issue's trials (default 250 ms interval), then DECIDE_FAST_TRIALS more
# with --interval 50ms, to show how much of the time to open is the interval.
decide_phase() {
	if [ "$DECIDE_TRIALS" -gt 0 ]; then
		echo "bench: decision speed, $DECIDE_TRIALS trials" >&2
		wait_quiet
		DEPWATCH=$DEPWATCH python3 bench/decide.py "$DECIDE_TRIALS" --out "$work/decide.json" \
			>/dev/null || die "bench/decide.py failed"
	fi
	if [ "$DECIDE_FAST_TRIALS" -gt 0 ]; then
		echo "bench: decision speed with --interval 50ms, $DECIDE_FAST_TRIALS trials" >&2
		wait_quiet
		DEPWATCH=$DEPWATCH DECIDE_INTERVAL=50ms python3 bench/decide.py "$DECIDE_FAST_TRIALS" \
			--out "$work/decide-fast.json" >/dev/null || die "bench/decide.py failed"
	fi
}

# Issue 15: the worker pool against a dependency going from 200 ms to 9 s, depwatch off,
# enforce = connect, enforce = abort; pool.md (with pool.png, gnuplot) joins the report.
pool_phase() {
	[ "$POOL" = 1 ] || return 0
	echo "bench: worker pool, off / connect / abort" >&2
	wait_quiet
	DEPWATCH=$DEPWATCH python3 bench/pool.py --out "$work" >/dev/null || die "bench/pool.py failed"
}

# Issue 25: the same pool against three replicas, one going from 200 ms to 9 s, depwatch off,
# eject = on with enforce = abort, enforce = abort alone; replicas.md (with replicas.png) joins
# the report.
replicas_phase() {
	[ "$REPLICAS" = 1 ] || return 0
	echo "bench: worker pool against three replicas, off / eject / breaker alone" >&2
	wait_quiet
	DEPWATCH=$DEPWATCH python3 bench/replicas.py --out "$work" >/dev/null || die "bench/replicas.py failed"
}

scale_phase() {
	local quick=()

	[ "$SCALE" = 1 ] || return 0
	[ "$BENCH_QUICK" = 1 ] && quick=(--quick)
	echo "bench: scale" >&2
	wait_quiet
	DEPWATCH=$DEPWATCH SCALE_LOGDIR=$work python3 bench/scale.py "${quick[@]}" \
		--out "$work/scale.json" >/dev/null || die "bench/scale.py failed (log: $work/dwscale.log)"
}

# Bounded outputs (issue 16): /metrics and status sizes and render times, without a cap and at
# the default --max-series, at 2 000 and 10 000 destinations and 50 callers (--quick: 2 000).
pages_phase() {
	local quick=()

	[ "$SCALE" = 1 ] || return 0
	[ "$BENCH_QUICK" = 1 ] && quick=(--quick)
	echo "bench: pages" >&2
	wait_quiet
	DEPWATCH=$DEPWATCH python3 bench/pages.py "${quick[@]}" >"$work/pages.md" ||
		die "bench/pages.py failed (log: /tmp/dwpages.log)"
}

# Issue 46's budgets, the report's first table: bench/budgets.py (its own interleaved arms; BUDGETS=0
# skips it).
budgets_phase() {
	local quick=()

	[ "${BUDGETS:-1}" = 1 ] || return 0
	[ "$BENCH_QUICK" = 1 ] && quick=(--rounds 1 --seconds 1 --tls-rounds 1 --go-rounds 1 --go-requests 500)
	echo "bench: budgets (bench/budgets.py)" >&2
	wait_quiet
	OUT=$OUT python3 bench/budgets.py "${quick[@]}" --out "$work/budgets.md" >/dev/null ||
		die "bench/budgets.py failed"
}

main() {
	local start

	preflight
	start=$(date +%s)
	export LOAD_BEFORE
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	budgets_phase
	pingpong_phase
	dd_phase
	h2_phase
	decide_phase
	pool_phase
	replicas_phase
	scale_phase
	pages_phase
	export LOAD_AFTER ELAPSED CMDLINE MACHINE DATE PAIRS RUN_SECONDS WARMUP_MS PIN \
		BUILD_ID ATTACHED_sock ATTACHED_syscalls PEER BPFTRACE_VERSION QUIET_WAITED BENCH_QUICK \
		ATTACHED_before ATTACHED_floor BEFORE_ID BEFORE_LABEL TW_MAX CHURN_THREADS TW_REUSE PORT_RANGE TW_OVERFLOW TW_BUCKETS \
		H2 H2_REQUESTS H2_CLIENTS H2_STREAMS H2_VERSION STATS_RUNS
	H2_VERSION=$([ "$H2" = 1 ] && "$H2LOAD" --version 2>/dev/null | head -n1 || echo "not run")
	LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
	TW_REUSE=$(cat /proc/sys/net/ipv4/tcp_tw_reuse)
	TW_BUCKETS=$(cat /proc/sys/net/ipv4/tcp_max_tw_buckets)
	PORT_RANGE=$(tr -s '\t ' '-' </proc/sys/net/ipv4/ip_local_port_range)
	ELAPSED=$(($(date +%s) - start))
	CMDLINE=$(command_line)
	MACHINE=$(machine)
	DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
	BUILD_ID="$OUT/depwatch as copied at the start: $(sha256sum "$DEPWATCH" | cut -c1-12)$SOURCE_ID"
	BPFTRACE_VERSION=$([ "$PEER" = 1 ] && "$BPFTRACE" --version 2>/dev/null || echo "not run")
	QUIET_WAITED=$(((QUIET_BUDGET * 4 - quiet_left) / 4))
	BUDGETS_MD="$work/budgets.md" python3 bench/report.py "$work/runs.tsv" "$work/stats.tsv" "$work/decide.json" \
		"$work/scale.json" "$work/decide-fast.json" "$work/dd.tsv" "$work/h2.tsv" "$work/h2stats.tsv" \
		>"$work/report.md"
	if [ -f "$work/pool.md" ]; then
		printf '\n' >>"$work/report.md"
		cat "$work/pool.md" >>"$work/report.md"
		[ -f "$work/pool.png" ] && cp "$work/pool.png" "$(dirname "$RESULTS")/pool.png"
	fi
	if [ -f "$work/replicas.md" ]; then
		printf '\n' >>"$work/report.md"
		cat "$work/replicas.md" >>"$work/report.md"
		[ -f "$work/replicas.png" ] && cp "$work/replicas.png" "$(dirname "$RESULTS")/replicas.png"
	fi
	if [ -s "$work/pages.md" ]; then
		printf '\n## Bounded outputs (bench/pages.py)\n\n' >>"$work/report.md"
		cat "$work/pages.md" >>"$work/report.md"
	fi
	cp "$work/report.md" "$RESULTS"
	cat "$work/report.md"
	echo "bench: wrote $RESULTS (${ELAPSED}s, ${QUIET_WAITED}s of it" \
		"waiting for other dw_ programs to go)" >&2
}

# On one line: bash reads a script as it runs it, and an edit to this file
# during a run must not make it read on after main returns.
main "$@"; exit
