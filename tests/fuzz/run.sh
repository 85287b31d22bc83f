#!/usr/bin/env bash
# Runs the libFuzzer targets: first over the regression inputs (crashes found
# earlier, kept forever), then for SECONDS of new inputs each. A crash leaves
# its input in tests/fuzz/regressions/ to be committed with the fix.
# Targets: config (the config parser), http1 (the HTTP/1 status-line reader), goelf (the Go
# probe finder's parsers), hblock (HTTP/2 header blocks), run side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
mkdir -p tests/fuzz/regressions	# git keeps no empty folder

run() {
	local name=$1 maxlen=$2 what=$3 bin=${OUT:-build}/fuzz_$1 work
	work=$(mktemp -d)
	cp "tests/fuzz/corpus/$name"/* "$work/"
	if compgen -G "tests/fuzz/regressions/$name-*" >/dev/null; then
		"$bin" tests/fuzz/regressions/"$name"-*
	fi
	"$bin" -max_total_time="$seconds" -max_len="$maxlen" \
		-artifact_prefix="tests/fuzz/regressions/$name-" "$work" 2>&1 | tail -n 3
	rm -rf "$work"
	echo "fuzz: $what, ${seconds}s: no crash"
}

# The four side by side, each for SECONDS of wall time (make test's stage: 49 s one after the
# other, issue 36), each one's output printed whole when it ends; any crash fails the run.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for t in "config 8192 config parser" "http1 64 HTTP/1 status-line reader" \
	"goelf 8192 Go ELF, .gopclntab, build info and RET parsers" \
	"hblock 4096 HTTP/2 header-block reader (records, HPACK)"; do
	read -r name maxlen what <<<"$t"
	run "$name" "$maxlen" "$what" >"$logs/$name" 2>&1 &
	pids+=("$!:$name")
done
rc=0
for p in "${pids[@]}"; do
	wait "${p%%:*}" || { rc=1; echo "fuzz: ${p#*:}: FAILED"; }
	cat "$logs/${p#*:}"
done
exit "$rc"
