#!/usr/bin/env python3
"""The include graph of user/ (issue 47): circles, the longest chain, and arrows back up.

Reads every `#include "..."` of user/**/*.{c,h}, resolved as the compiler does (the includer's
own folder first, then -I build -I bpf -I user, the Makefile's order). Prints each folder's file
count, the circles (files that include one another, however far round), the longest chain of
user/ headers, and every include that goes against the folder order in LAYERS (a folder may
include its own files and those of folders below it, never one above). Exits 1 on a circle or an
arrow back up. `make check` runs it quiet (-q: problems and one line); -v lists the folder arrows.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE_DIRS = ["build", "bpf", "user"]

# Top to bottom; a folder includes only itself and those after it (doc/architecture.md's map).
# Folders in one row are side by side: neither includes the other.
LAYERS = [
    ["daemon"],
    ["cli", "output"],
    ["collect", "dns", "discovery", "control"],
    ["kernel"],
    ["host"],
    ["logic/services", "logic/view"],
    ["logic/depset", "logic/kernel"],
    ["logic/judge"],
    ["logic/config"],
    ["logic/outcome", "logic/callers", "logic/discovery"],
    ["logic/base"],
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder(path):
    """user/discovery/tls/scan.c -> discovery; user/logic/config/match.h -> logic/config."""
    parts = path.split("/")[1:-1]
    if not parts:
        return "."
    return "/".join(parts[:2]) if parts[0] == "logic" else parts[0]


def rank(f):
    for i, row in enumerate(LAYERS):
        if f in row:
            return i
    return None


def resolve(includer, name):
    for d in [os.path.dirname(includer)] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def graph():
    files, edges = [], {}
    for d, _, names in os.walk(os.path.join(ROOT, "user")):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), ROOT))
    for f in sorted(files):
        with open(os.path.join(ROOT, f)) as fh:
            text = fh.read()
        edges[f] = []
        for name in INCLUDE.findall(text):
            p = resolve(f, name)
            if p and p.startswith("user/"):
                edges[f].append((p, name))
    return sorted(files), edges


def circles(files, edges):
    """Strongly connected components of more than one file, or a file including itself (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _ in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or any(w == v for w, _ in edges[v]):
                out.append(sorted(comp))

    for f in files:
        if f not in index:
            visit(f)
    return out


def longest_chain(files, edges):
    memo = {}

    def chain(v, seen):
        if v in memo:
            return memo[v]
        best = [v]
        for w, _ in edges[v]:
            if w in seen:
                continue
            c = chain(w, seen | {w})
            if len(c) + 1 > len(best):
                best = [v] + c
        memo[v] = best
        return best

    return max((chain(f, {f}) for f in files), key=len)


def main():
    verbose = "-v" in sys.argv[1:]
    if "-q" in sys.argv[1:]:
        return quiet()
    files, edges = graph()
    counts = {}
    for f in files:
        counts[folder(f)] = counts.get(folder(f), 0) + 1
    print("files per folder: " + ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items())))
    bad = 0
    circ = circles(files, edges)
    for c in circ:
        print("circle: " + " <-> ".join(c))
    print("circles: %d" % len(circ))
    if not circ:
        c = longest_chain(files, edges)
        print("longest include chain: %d files: %s" % (len(c), " -> ".join(x[len("user/"):] for x in c)))
    unranked = sorted({folder(f) for f in files if rank(folder(f)) is None})
    for u in unranked:
        print("folder with no layer in scripts/includes.py: %s" % u)
    arrows = {}
    for f in files:
        for p, name in edges[f]:
            a, b = folder(f), folder(p)
            if a == b:
                continue
            arrows.setdefault((a, b), []).append("%s -> %s" % (f, p))
            ra, rb = rank(a), rank(b)
            if ra is not None and rb is not None and rb <= ra:
                print("arrow back up: %s includes \"%s\" (%s is not below %s)" % (f, name, b, a))
                bad += 1
    if verbose:
        for (a, b), why in sorted(arrows.items()):
            print("  %s -> %s (%d)" % (a, b, len(why)))
    print("arrows back up: %d" % bad)
    return 1 if circ or bad or unranked else 0


def quiet():
    """For make check: the problems, then one line."""
    files, edges = graph()
    circ = circles(files, edges)
    for c in circ:
        print("includes: circle: " + " <-> ".join(c))
    bad = 0
    for f in files:
        for p, name in edges[f]:
            a, b = folder(f), folder(p)
            ra, rb = rank(a), rank(b)
            if a != b and (ra is None or rb is None or rb <= ra):
                print("includes: %s includes \"%s\": %s is not below %s (scripts/includes.py's LAYERS)" % (f, name, b, a))
                bad += 1
    longest = 0 if circ else len(longest_chain(files, edges))
    print("includes: %d files in user/, %d circles, %d arrows back up, the longest chain %d files"
          % (len(files), len(circ), bad, longest))
    return 1 if circ or bad else 0


if __name__ == "__main__":
    sys.exit(main())
