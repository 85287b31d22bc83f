#!/usr/bin/env bash
# Interleaved A/B benchmark of depwatch's cost on a loopback request/response
# workload (build/pingpong). For each configuration (message size x client
# threads) it alternates in time: A = no depwatch, B = depwatch running (a
# fresh daemon started before and stopped after each B run). Then one extra
# run per configuration with kernel.bpf_stats_enabled=1 measures each BPF
# program's average cost per invocation; the sysctl is restored afterwards.
#
# pingpong runs with --pin (each client thread and its server thread share a
# CPU): unpinned single-connection runs on a VM swing 2-5x from run to run
# with where the scheduler puts the two threads, which buries the effect
# measured here. PIN=0 measures unpinned.
#
# Other depwatch instances (e.g. integration tests run by someone else) would
# put their dw_ programs on every TCP event of both A and B runs: each run
# first waits up to QUIET_WAIT seconds for there to be none (QUIET_BUDGET
# seconds of such waiting in all, to bound the whole benchmark), and the
# report counts the runs during which there were some anyway.
#
# Prints a Markdown report and writes it to bench/RESULTS.md. Needs root.
# Called by `make bench`. Knobs (environment): PAIRS (default 7),
# RUN_SECONDS (default 3), WARMUP_MS (default 300), PIN (default 1),
# QUIET_WAIT (default 5), QUIET_BUDGET (default 90).
# Nothing here asserts on timing: the numbers are reported, never judged.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-build}
PAIRS=${PAIRS:-7}
RUN_SECONDS=${RUN_SECONDS:-3}
WARMUP_MS=${WARMUP_MS:-300}
PIN=${PIN:-1}
QUIET_WAIT=${QUIET_WAIT:-5}
QUIET_BUDGET=${QUIET_BUDGET:-90}
CONFIGS=("1 1" "1 2" "4096 1" "4096 2")	# "size threads"
PIN_DIR=/sys/fs/bpf/dwbench
RUN_DIR=/tmp/dwbench
PINGPONG=$OUT/pingpong
DEPWATCH=$OUT/depwatch
BPFTOOL=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}
RESULTS=bench/RESULTS.md

work=$(mktemp -d /tmp/dwbench-run.XXXXXX)
daemon_pid=""
stats_orig=""
quiet_left=$((QUIET_BUDGET * 4))	# quarter seconds of waiting left

die() {
	echo "bench: $*" >&2
	exit 1
}

# Stops the daemon: SIGTERM, up to 5 s for a clean exit, then SIGKILL.
daemon_stop() {
	local pid=$daemon_pid i rc=0

	[ -n "$pid" ] || return 0
	daemon_pid=""
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "bench: depwatch (pid $pid) ignored SIGTERM for 5 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	[ "$rc" -eq 0 ] || echo "bench: depwatch exited with status $rc" >&2
	return 0
}

stats_restore() {
	[ -n "$stats_orig" ] || return 0
	sysctl -q -w kernel.bpf_stats_enabled="$stats_orig" >/dev/null || true
}

cleanup() {
	daemon_stop
	stats_restore
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE

# Starts depwatch and waits (up to 10 s) for its "started" line, which names
# its pid: the log is truncated here, not in the child, so a previous run's
# line cannot be taken for this one's.
daemon_start() {
	local log=$work/daemon.log i

	: >"$log"
	"$DEPWATCH" run --pin-dir "$PIN_DIR" --run-dir "$RUN_DIR" >>"$log" 2>&1 &
	daemon_pid=$!
	for ((i = 0; i < 100; i++)); do
		if grep -q "^depwatch: started (.*pid $daemon_pid," "$log"; then
			ATTACHED=$(sed -n 's/^depwatch: started (.*); attached: /attached: /p' "$log")
			return 0
		fi
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	daemon_stop
	die "depwatch did not start (log above)"
}

# The BPF program ids the running daemon holds, from its file descriptors.
daemon_prog_ids() {
	grep -h '^prog_id:' /proc/"$daemon_pid"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un
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

# Appends "id name run_time_ns run_cnt" for the given ids to $1.
bpf_snapshot() {
	local file=$1
	shift
	"$BPFTOOL" prog show --json | python3 -c '
import json, sys
ids = {int(i) for i in sys.argv[1:]}
for p in json.load(sys.stdin):
	if p["id"] in ids:
		print(p["id"], p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$@" |
		LC_ALL=C sort >"$file"
}

# Runs pingpong once; prints its result line, which must have all six fields.
pingpong() {
	local size=$1 threads=$2 warmup=$3 line pin=() n='[0-9.]+'

	[ "$PIN" = 0 ] || pin=(--pin)
	line=$("$PINGPONG" --size "$size" --threads "$threads" --seconds "$RUN_SECONDS" \
		--warmup-ms "$warmup" --cpu "${pin[@]}") ||
		die "pingpong failed (size $size, threads $threads)"
	[[ $line =~ ^calls=$n\ seconds=$n\ calls_per_s=$n\ p50_us=$n\ p99_us=$n\ cpu_us_per_call=$n$ ]] ||
		die "unexpected pingpong output: $line"
	echo "$line"
}

# One run; appends "size threads pair mode foreign calls seconds calls_per_s p50 p99
# cpu_us_per_call" to runs.tsv, foreign being the most dw_ programs of others
# seen before or after the run.
one_run() {
	local size=$1 threads=$2 pair=$3 mode=$4 line ids="" f0 f1

	wait_quiet
	f0=$quiet
	if [ "$mode" = B ]; then
		daemon_start
		ids=$(daemon_prog_ids)
	fi
	line=$(pingpong "$size" "$threads" "$WARMUP_MS")
	# shellcheck disable=SC2086
	f1=$(foreign_dw_progs $ids)
	[ "$mode" = A ] || daemon_stop
	printf '  size=%-5s threads=%s pair=%s %s  %s%s\n' "$size" "$threads" "$pair" \
		"$([ "$mode" = A ] && echo baseline || echo depwatch)" "$line" \
		"$([ $((f0 + f1)) -eq 0 ] || echo "  (other dw_ programs: $f0 before, $f1 after)")" >&2
	# shellcheck disable=SC2001
	echo "$size $threads $pair $mode $((f0 > f1 ? f0 : f1))" \
		"$(sed 's/[a-z0-9_]*=//g' <<<"$line")" >>"$work/runs.tsv"
}

# With depwatch running and BPF stats on: per-program deltas over one pingpong run.
stats_run() {
	local size=$1 threads=$2 line ids calls

	wait_quiet
	daemon_start
	ids=$(daemon_prog_ids)
	[ -n "$ids" ] || die "cannot find depwatch's BPF programs in /proc/$daemon_pid/fdinfo"
	sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
	# shellcheck disable=SC2086
	bpf_snapshot "$work/before" $ids
	line=$(pingpong "$size" "$threads" 0)
	# shellcheck disable=SC2086
	bpf_snapshot "$work/after" $ids
	stats_restore
	daemon_stop
	echo "  size=$size threads=$threads stats run: $line" >&2
	calls=${line%% *}
	LC_ALL=C join "$work/before" "$work/after" | while read -r _ name t0 c0 _ t1 c1; do
		echo "$size $threads $name $((t1 - t0)) $((c1 - c0)) ${calls#calls=}"
	done >>"$work/stats.tsv"
}

preflight() {
	[ "$(id -u)" -eq 0 ] || die "needs root (loads BPF programs)"
	[ -x "$PINGPONG" ] || die "build first: make $PINGPONG"
	[ -x "$DEPWATCH" ] || die "build first: make $DEPWATCH"
	[ -x "$BPFTOOL" ] || die "bpftool not found"
	[ -r /proc/sys/kernel/bpf_stats_enabled ] || die "no kernel.bpf_stats_enabled sysctl"
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	stats_orig=$(cat /proc/sys/kernel/bpf_stats_enabled)
	# A private copy (the skeleton carries the BPF object): a concurrent `make`
	# replacing build/depwatch mid-benchmark must not change what B runs run.
	cp "$DEPWATCH" "$work/depwatch"
	DEPWATCH=$work/depwatch
	: >"$work/runs.tsv"
	: >"$work/stats.tsv"
}

# The exact command, with any knob that differs from its default.
command_line() {
	local env=""

	[ "$PAIRS" = 7 ] || env+="PAIRS=$PAIRS "
	[ "$RUN_SECONDS" = 3 ] || env+="RUN_SECONDS=$RUN_SECONDS "
	[ "$WARMUP_MS" = 300 ] || env+="WARMUP_MS=$WARMUP_MS "
	[ "$PIN" = 1 ] || env+="PIN=$PIN "
	[ "$QUIET_WAIT" = 5 ] || env+="QUIET_WAIT=$QUIET_WAIT "
	[ "$QUIET_BUDGET" = 90 ] || env+="QUIET_BUDGET=$QUIET_BUDGET "
	echo "${env}make bench"
}

main() {
	local cfg size threads pair start

	preflight
	start=$(date +%s)
	echo "bench: $PAIRS A/B pairs x ${#CONFIGS[@]} configs, ${RUN_SECONDS}s per run" \
		"(+${WARMUP_MS}ms warm-up), PIN=$PIN; A = baseline, B = depwatch" >&2
	export LOAD_BEFORE
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	for cfg in "${CONFIGS[@]}"; do
		read -r size threads <<<"$cfg"
		for ((pair = 1; pair <= PAIRS; pair++)); do
			one_run "$size" "$threads" "$pair" A
			one_run "$size" "$threads" "$pair" B
		done
		stats_run "$size" "$threads"
	done
	export LOAD_AFTER ELAPSED CMDLINE KERNEL CPU_MODEL CORES DATE PAIRS RUN_SECONDS WARMUP_MS PIN \
		BUILD_ID ATTACHED
	LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
	ELAPSED=$(($(date +%s) - start))
	CMDLINE=$(command_line)
	KERNEL=$(uname -r)
	CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
	CORES=$(nproc)
	DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
	BUILD_ID="$OUT/depwatch as copied at the start: $(sha256sum "$DEPWATCH" | cut -c1-12)"
	python3 bench/report.py "$work/runs.tsv" "$work/stats.tsv" >"$work/report.md"
	cp "$work/report.md" "$RESULTS"
	cat "$work/report.md"
	echo "bench: wrote $RESULTS (${ELAPSED}s, $(((QUIET_BUDGET * 4 - quiet_left) / 4))s of it" \
		"waiting for other dw_ programs to go)" >&2
}

main "$@"
