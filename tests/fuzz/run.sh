#!/usr/bin/env bash
# Runs the libFuzzer targets: first over the regression inputs (crashes found
# earlier, kept forever), then for SECONDS of new inputs each. A crash leaves
# its input in tests/fuzz/regressions/ to be committed with the fix.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
bin=${OUT:-build}/fuzz_config
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/config/* "$work/"
mkdir -p tests/fuzz/regressions	# git keeps no empty folder
if compgen -G "tests/fuzz/regressions/config-*" >/dev/null; then
	"$bin" tests/fuzz/regressions/config-*
fi
"$bin" -max_total_time="$seconds" -max_len=8192 -artifact_prefix=tests/fuzz/regressions/config- \
	"$work" 2>&1 | tail -n 3
echo "fuzz: config parser, ${seconds}s: no crash"

# The Go probe finder's parsers (tests/fuzz/fuzz_goelf.c), the same way.
gobin=${OUT:-build}/fuzz_goelf
gowork=$(mktemp -d)
trap 'rm -rf "$work" "$gowork"' EXIT
cp tests/fuzz/corpus/goelf/* "$gowork/"
if compgen -G "tests/fuzz/regressions/goelf-*" >/dev/null; then
	"$gobin" tests/fuzz/regressions/goelf-*
fi
"$gobin" -max_total_time="$seconds" -max_len=8192 -artifact_prefix=tests/fuzz/regressions/goelf- \
	"$gowork" 2>&1 | tail -n 3
echo "fuzz: Go ELF, .gopclntab, build info and RET parsers, ${seconds}s: no crash"
