"""The machine-wide test lock of tests/suitelock.sh, taken from Python: the same file, the same
flock(2), the same message. run.py takes it unless its parent run holds it (DW_TEST_LOCK=held)."""

import fcntl
import os
import time

LOCK_FILE = os.environ.get("DW_TEST_LOCK_FILE", "/run/lock/depwatch-tests.lock")


def take(what):
    """Takes the lock for this process's life (waiting, and saying for whom); returns its fd, or
    None when a parent run holds it already."""
    if os.environ.get("DW_TEST_LOCK") == "held":
        return None
    os.makedirs(os.path.dirname(LOCK_FILE), exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            with open(LOCK_FILE) as f:
                who = f.read().strip()
        except OSError:
            who = "?"
        print("depwatch tests: waiting for the machine's test lock (%s), held by: %s" % (LOCK_FILE, who), flush=True)
        since = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("depwatch tests: got the test lock after %.0f s" % (time.monotonic() - since), flush=True)
    with open(LOCK_FILE, "w") as f:
        f.write("pid %d, %s, in %s, since %s\n" % (os.getpid(), what, os.getcwd(),
                                                    time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())))
    os.environ["DW_TEST_LOCK"] = "held"
    return fd


class SideBySide:
    """The two backends' passes of make test run side by side (DW_SIDE_BY_SIDE=1, tests/run-all.sh):
    they mostly wait (12-19% of the CPUs each), but a test that loads the machine (wrk or h2load
    at full speed, 20 000 connections, valgrind) would push the other pass's timing out of its
    tolerances. Such a test is marked to run alone (harness.runs_alone): it holds a read-write
    lock exclusively, every other test holds it shared, so it starts once the other pass's
    current test ends and the other pass's next test waits for it. A turnstile taken before the
    lock keeps a waiting exclusive test from being starved by the other pass's stream of shared
    ones. Outside make test's side-by-side run (one pass, make itest) it does nothing."""

    def __init__(self):
        self.enabled = os.environ.get("DW_SIDE_BY_SIDE") == "1"
        self.waited = 0.0
        self.alone_tests = 0
        if self.enabled:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
            self.turn = os.open(LOCK_FILE + ".turn", flags, 0o644)
            self.cpu = os.open(LOCK_FILE + ".cpu", flags, 0o644)

    def enter(self, alone):
        if not self.enabled:
            return
        since = time.monotonic()
        fcntl.flock(self.turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.cpu, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turn, fcntl.LOCK_UN)
        self.waited += time.monotonic() - since
        self.alone_tests += bool(alone)

    def leave(self):
        if self.enabled:
            fcntl.flock(self.cpu, fcntl.LOCK_UN)
