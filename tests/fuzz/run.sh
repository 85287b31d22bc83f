#!/usr/bin/env bash
# Runs the libFuzzer targets: first over the regression inputs (crashes found
# earlier, kept forever), then for SECONDS of new inputs each. A crash leaves
# its input in tests/fuzz/regressions/ to be committed with the fix.
# Targets: config (the config parser), http1 (the HTTP/1 status-line reader), goelf, hblock (HTTP/2 header blocks).
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

run config 8192 "config parser"
run http1 64 "HTTP/1 status-line reader"
run goelf 8192 "Go ELF, .gopclntab, build info and RET parsers"
run hblock 4096 "HTTP/2 header-block reader (records, HPACK)"
