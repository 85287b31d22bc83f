#!/usr/bin/env bash
# Builds depwatch from an earlier git revision, for make bench's BEFORE arm,
# without touching the working tree: a detached `git worktree` in a temporary
# directory, `make` there into its own output dir, the binary copied out, the
# worktree removed again (also on failure).
#
# usage: bench/build-before.sh REV DEST [PATCH]
#   REV   any revision git understands (e.g. f9826fc)
#   DEST  where the binary goes (e.g. build-bench/depwatch-before); DEST.id
#         gets one line naming the revision, which the report quotes
#   PATCH optional: a patch (bench/variants/*.patch) applied to that revision
#         before the build: an experiment variant for the same arm, named in
#         DEST.id too
# DEST.bpf.o gets the build's linked BPF object, for comparing per-program
# instruction counts (llvm-readelf -s DEST.bpf.o: each FUNC's size / 8).
# `make OUT=build-bench bench-before BEFORE_REV=f9826fc` runs it with DEST =
# $(OUT)/depwatch-before; `make OUT=build-bench bench-variant VARIANT=percpu` runs it
# with REV = HEAD, PATCH = bench/variants/percpu.patch, DEST = $(OUT)/depwatch-percpu.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 REV DEST [PATCH]" >&2; exit 2; }
rev=$1
dest=$2
patch=${3:-}
[ -z "$patch" ] || patch=$(realpath "$patch")
sha=$(git rev-parse --verify "$rev^{commit}")
tree=$(mktemp -d /tmp/dw-before.XXXXXX)
rmdir "$tree"	# git worktree add creates it

remove_tree() {
	git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
	git worktree prune
}
trap remove_tree EXIT

git worktree add --detach --quiet "$tree" "$sha"
[ -z "$patch" ] || git -C "$tree" apply "$patch"
make -C "$tree" OUT=build build/depwatch
mkdir -p "$(dirname "$dest")"
cp "$tree/build/depwatch" "$dest.tmp"
mv "$dest.tmp" "$dest"
[ ! -f "$tree/build/depwatch.bpf.o" ] || cp "$tree/build/depwatch.bpf.o" "$dest.bpf.o"
echo "commit $(git log -1 --format='%h %s' "$sha" | cut -c1-100)${patch:+ + ${patch#"$PWD/"}}" >"$dest.id"
echo "bench: built $dest from $(cat "$dest.id")" >&2
