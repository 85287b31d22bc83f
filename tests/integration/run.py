#!/usr/bin/env python3
"""Runs depwatch's integration tests (tests/integration/test_*.py) against the
real kernel, as root, from the repository root:

    python3 tests/integration/run.py [-k PATTERN]

Prints the unittest report (verbosity 2), then as its very last line
"N passed, M failed" (", K skipped" when something was skipped) after a line
"failed: ID -- its error's last line" per failed test, and exits
non-zero if anything failed. Python 3 standard library only.
"""

import argparse
import os
import re
import resource
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SIDE = None     # suitelock.SideBySide, made in main()


class CountingResult(unittest.TextTestResult):
    """Remembers one outcome per test, whichever of its phases (test body,
    tearDown, cleanups, subtests) went wrong; a class or module fixture that
    failed (no test of its own) counts as one failure."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outcome = {}
        self.fixture_failures = 0
        self.took = {}

    def _mark(self, test, what):
        tid = test.id()
        if tid in self.outcome:
            if what == "fail" or self.outcome[tid] == "pass":
                self.outcome[tid] = what
        else:
            self.fixture_failures += 1

    def startTest(self, test):
        super().startTest(test)
        self.outcome[test.id()] = "pass"
        # a test skipped before it runs (the other backend's, backend_independent) waits for nothing
        self.entered = not will_skip(test)
        if self.entered:
            SIDE.enter_test(runs_alone(test), test.id())
        # its time from when it holds its lock: the durations are the tests', not the waits'
        self.took[test.id()] = time.monotonic()

    def stopTest(self, test):
        if self.entered:
            SIDE.leave_test()
        self.took[test.id()] = time.monotonic() - self.took[test.id()]
        super().stopTest(test)


    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._mark(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._mark(test, "fail")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._mark(test, "fail")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._mark(test, "skip")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._mark(test, "fail")


def by_module(suite):
    """The suite's tests in their order, grouped by module: [(module name, [test, ...])]."""
    groups = []

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
                continue
            module = type(t).__module__
            if not groups or groups[-1][0] != module:
                groups.append((module, []))
            groups[-1][1].append(t)
    walk(suite)
    return groups


def will_skip(test):
    """Whether unittest skips the test before running it: a skip decorator on its class or method
    (backend_independent in the other pass, a lacking kernel). Such a test, or a module of them,
    takes no lock of the side-by-side run: it waited up to half a minute for a module of the
    other pass to end, to be skipped (test_deb, 37 s in the syscalls pass, 2026-12-06)."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    return bool(getattr(type(test), "__unittest_skip__", False) or getattr(method, "__unittest_skip__", False))


def runs_alone(test):
    """harness.runs_alone on the test's method, its class or its module (RUNS_ALONE = True)."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    return bool(getattr(method, "RUNS_ALONE", False) or getattr(type(test), "RUNS_ALONE", False)
                or alone_module(type(test).__module__))


def alone_module(module):
    """Whether all the module's tests load the machine (RUNS_ALONE = True): it holds the CPUs alone
    once, for the whole module (suitelock.SideBySide)."""
    return bool(getattr(sys.modules.get(module), "RUNS_ALONE", False))


def alone_on_host(module):
    """Whether the module holds the host alone (RUNS_ALONE_ON_HOST = True, suitelock.SideBySide)."""
    return bool(getattr(sys.modules.get(module), "RUNS_ALONE_ON_HOST", False))


def failed_ids(result):
    """The ids of the tests that failed, then the fixtures (setUpClass ...) that did, each with
    the last line of its first error (the assertion's message, cut to 400 characters): CI keeps
    only the tail of a run's output, and the stages' summary repeats these lines."""
    why = {}
    for test, text in result.errors + result.failures:
        tid = test.id() if test.id() in result.outcome else str(test)
        lines = [l for l in text.strip().splitlines() if l.strip()]
        # the exception's line and what its message goes on with (a verdict's problems list)
        at = max([i for i, l in enumerate(lines) if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", l)]
                 or [len(lines) - 1])
        why.setdefault(tid, " ".join(" ".join(lines[at:at + 4]).split())[:400])
    ids = sorted(tid for tid, what in result.outcome.items() if what == "fail")
    ids += [tid for tid in why if tid not in result.outcome and tid not in ids]
    return [tid + (" -- " + why[tid] if why.get(tid) else "") for tid in ids]


def print_durations(took, n):
    per_file = {}
    for tid, s in took.items():
        per_file[tid.split(".")[0]] = per_file.get(tid.split(".")[0], 0) + s
    print("slowest tests:")
    for tid, s in sorted(took.items(), key=lambda kv: -kv[1])[:n]:
        print("  %6.1f s  %s" % (s, tid))
    print("per file: " + ", ".join("%s %.0f s" % kv for kv in sorted(per_file.items(), key=lambda kv: -kv[1])))
    import harness
    starts = sorted(harness.START_TIMES)
    if starts:
        print("daemon starts: %d, %.0f s in all, median %.1f s, slowest %.1f s"
              % (len(starts), sum(starts), starts[len(starts) // 2], starts[-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="patterns", action="append", default=None,
                    help="only tests whose name contains this substring (repeatable)")
    ap.add_argument("--durations", type=int, default=0, metavar="N",
                    help="list the N slowest tests and the time per file")
    args = ap.parse_args()

    sys.path.insert(0, HERE)
    # one run at a time on this machine (tests/suitelock.sh): taken before the first daemon starts
    import suitelock
    global SIDE
    SIDE = suitelock.SideBySide()
    suitelock.take("tests/integration/run.py %s, backend %s"
                   % (" ".join(sys.argv[1:]) or "(all)", os.environ.get("DW_BACKEND") or "(probed)"))
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = ["*%s*" % p for p in args.patterns]
    start = time.monotonic()
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: the integration tests load BPF programs (run as root)")
    try:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    except Exception as e:  # an import error is a failure, not silence
        problems.append("cannot load the tests: %r" % e)
        suite = unittest.TestSuite()

    # one module at a time, each run as a suite of its own (its fixtures and cleanups inside it), so
    # that a side-by-side run can hold the host for a module (suitelock.SideBySide)
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=CountingResult)
    result = runner._makeResult()
    result.startTestRun()
    queue = suitelock.ModuleQueue()
    claimed = 0
    groups = by_module(suite)
    if queue.path:
        # the modules that hold the host alone first, then those that hold the CPUs alone: while
        # one runs, no other runner runs a test, so they cost the same at any point of the run;
        # but each first waits for every test then running to end, with the CPUs idle: at the
        # start the others are in the same modules or their first tests, not in a soak of a minute
        groups.sort(key=lambda g: (not alone_on_host(g[0]), not alone_module(g[0])))
    for module, tests in groups:
        if not queue.claim(module):
            continue
        claimed += 1
        held = not all(will_skip(t) for t in tests)
        if held:
            SIDE.enter_module(alone_on_host(module), module, alone_module(module))
        try:
            unittest.TestSuite(tests).run(result)
        finally:
            # the suite tore its last class down; unittest would do it again at the next module's
            # first test (it remembers the class in the result, across top-level suites)
            result._previousTestClass = None
            if held:
                SIDE.leave_module()
    result.stopTestRun()
    result.printErrors()
    print("-" * 70 + "\nRan %d tests in %.3f s" % (result.testsRun, time.monotonic() - start))

    outcomes = list(result.outcome.values())
    passed = outcomes.count("pass")
    skipped = outcomes.count("skip")
    if not outcomes and not problems and (claimed or not queue.path):
        problems.append("no test ran")
    failed = outcomes.count("fail") + result.fixture_failures + len(problems)
    for p in problems:
        print("ERROR: " + p)
    if args.durations:
        print_durations(result.took, args.durations)
    took = time.monotonic() - start
    print("integration: %.1f s" % took)
    if SIDE.enabled:
        print(SIDE.report())
    # what the run asked of the CPUs (itself, its daemons, servers and tools, once waited for):
    # whether two runs could share this machine (issue 36)
    cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    print("cpu: %.0f s of user and system time, %.0f%% of the %d CPUs over the run"
          % (cpu, 100 * cpu / max(took, 1e-9) / (os.cpu_count() or 1), os.cpu_count() or 1))
    # what failed, by name, just above the count: the lines a stage's summary repeats
    for tid in failed_ids(result):
        print("failed: " + tid)
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    sys.stderr.flush()
    print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
