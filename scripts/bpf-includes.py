#!/usr/bin/env python3
"""The include graph of bpf/ (doc/architecture.md, "The include rule"): every `#include "..."`
line of every file under bpf/, resolved as the compiler does (the including file's folder, then
bpf/). Prints the longest chain from any file and the folders' file counts; fails (exit 1) on a
circle, a chain deeper than --max-depth edges, a file over --max-lines lines, an include that
resolves to no file under bpf/ (vmlinux.h, generated, is the one allowed), or a header with BPF
code (.bpf.h) that includes another: only a program (.bpf.c) includes those, each it uses, in
order; a .bpf.h includes pure headers (.h) only. And on a circle of calls between files: each
function's body's calls, by name, to the file that defines the callee (a regex over the C, comments
dropped: what it cannot parse it does not see). And on a program of SEAM_ONLY that includes a
layer's file (core/tcp.bpf.c: the layers through bpf/layers/'s declarations only).

  python3 scripts/bpf-includes.py [--max-depth 6] [--max-lines 500] [-v]
"""
import argparse
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf")
GENERATED = {"vmlinux.h"}
# Programs that reach the layers above TCP only through the seam's declarations (bpf/layers/):
# their source includes no file of a layer's folder (issue 47: tcp.bpf.c does not see HTTP/2).
SEAM_ONLY = {"core/tcp.bpf.c": ("h2/", "tls/", "answer/")}


def files():
    for d, _, names in os.walk(ROOT):
        for n in names:
            if n.endswith((".h", ".c")):
                yield os.path.relpath(os.path.join(d, n), ROOT)


def includes(path):
    out = []
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                out.append(m.group(1))
    return out


def resolve(path, inc):
    here = os.path.normpath(os.path.join(os.path.dirname(path), inc))
    if os.path.exists(os.path.join(ROOT, here)):
        return here
    if os.path.exists(os.path.join(ROOT, inc)):
        return os.path.normpath(inc)
    return None


def call_circles():
    """Circles in the graph of calls between files (see the docstring)."""
    defs, bodies = {}, {}
    for p in files():
        s = re.sub(r"/\*.*?\*/", "", open(os.path.join(ROOT, p)).read(), flags=re.S)
        for m in re.finditer(r"^(?:static|__weak|__noinline|int)[^\n;{]*?\b([a-z_][a-z0-9_]*)\s*\([^;{]*\)\s*\{", s, re.M):
            depth, i = 1, m.end()
            while depth and i < len(s):
                depth += {"{": 1, "}": -1}.get(s[i], 0)
                i += 1
            defs[m.group(1)] = p
            bodies.setdefault(p, []).append(s[m.end():i])
    edges = {}
    for p, bs in bodies.items():
        for b in bs:
            for c in re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", b):
                if defs.get(c, p) != p:
                    edges.setdefault(p, set()).add(defs[c])

    def reach(a):
        seen, todo = set(), [a]
        while todo:
            for y in edges.get(todo.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return seen

    return sorted({"calls go both ways between %s and %s" % tuple(sorted((a, b)))
                   for a in edges for b in edges[a] if a in reach(b)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-depth", type=int, default=6)
    ap.add_argument("--max-lines", type=int, default=500)
    ap.add_argument("-v", action="store_true", help="every file's own longest chain")
    a = ap.parse_args()
    errors = []
    graph = {}
    for p in sorted(files()):
        graph[p] = []
        for inc in includes(p):
            r = resolve(p, inc)
            if r is None:
                if inc not in GENERATED:
                    errors.append("%s: includes %s, which is no file under bpf/" % (p, inc))
                continue
            if p.endswith(".bpf.h") and r.endswith(".bpf.h"):
                errors.append("%s: includes %s: only a program (.bpf.c) includes a .bpf.h" % (p, r))
            if any(r.startswith(f) for f in SEAM_ONLY.get(p, ())):
                errors.append("%s: includes %s: it reaches the layers through the seam only" % (p, r))
            graph[p].append(r)
        with open(os.path.join(ROOT, p)) as f:
            n = sum(1 for _ in f)
        if n > a.max_lines:
            errors.append("%s: %d lines (at most %d)" % (p, n, a.max_lines))

    chain = {}   # file -> its longest chain of includes, itself first
    state = {}   # 1: on the walk's stack, 2: done

    def walk(p, stack):
        if state.get(p) == 2:
            return chain[p]
        if state.get(p) == 1:
            errors.append("circle: " + " -> ".join(stack[stack.index(p):] + [p]))
            return [p]
        state[p] = 1
        best = []
        for q in graph[p]:
            c = walk(q, stack + [p])
            if len(c) > len(best):
                best = c
        state[p] = 2
        chain[p] = [p] + best
        return chain[p]

    for p in graph:
        walk(p, [])
    longest = max(chain.values(), key=len)
    print("files: %d; longest include chain: %d edges: %s" % (len(graph), len(longest) - 1, " -> ".join(longest)))
    folders = {}
    for p in graph:
        folders[os.path.dirname(p) or "."] = folders.get(os.path.dirname(p) or ".", 0) + 1
    print("per folder: " + ", ".join("bpf/%s %d" % (d if d != "." else "", n) for d, n in sorted(folders.items())))
    if a.v:
        for p in sorted(graph):
            print("  %d %s" % (len(chain[p]) - 1, " -> ".join(chain[p])))
    errors += call_circles()
    for p, c in chain.items():
        if len(c) - 1 > a.max_depth:
            errors.append("%s: include chain of %d edges (at most %d): %s" % (p, len(c) - 1, a.max_depth, " -> ".join(c)))
    for e in sorted(set(errors)):
        print("bpf-includes: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
