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


class RWLock:
    """A read-write lock on a file (flock: shared or exclusive), with a turnstile taken while
    acquiring it, so that one waiting for it exclusively is not starved by a stream of shared
    holders. Whoever holds it never waits on its turnstile: no deadlock between two passes."""

    def __init__(self, path):
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self.turn = os.open(path + ".turn", flags, 0o644)
        self.fd = os.open(path, flags, 0o644)

    def take(self, exclusive):
        """Takes it (blocking); returns the seconds waited."""
        since = time.monotonic()
        fcntl.flock(self.turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turn, fcntl.LOCK_UN)
        return time.monotonic() - since

    def drop(self):
        fcntl.flock(self.fd, fcntl.LOCK_UN)


class SideBySide:
    """The two backends' passes of make test run side by side (DW_SIDE_BY_SIDE=1, tests/run-all.sh):
    they mostly wait (12-19% of the CPUs each). Two read-write locks keep them from judging each
    other, always taken in this order, the first for a module, the second for a test:
    - the host: every daemon on the host attaches its TLS uprobes to every TLS process (the other
      pass's servers and Go programs too), so a module whose assertions read the host's uprobes or
      TLS processes (RUNS_ALONE_ON_HOST = True) holds it exclusively, from its first fixture to its
      last cleanup, when no daemon of the other pass lives; every other module holds it shared;
    - the CPUs: a test that loads the machine (harness.runs_alone: wrk or h2load at full speed,
      20 000 connections, valgrind) holds it exclusively while the other pass's tests wait, so that
      their timing stays in its tolerances; every other test holds it shared. A module all of whose
      tests load it (RUNS_ALONE = True: test_realtraffic's 16) holds it once, from its first
      fixture to its last cleanup: each exclusive take first waits for every test then running to
      end, with the CPUs idle meanwhile, and once per module that wait is paid once.
    Outside make test's side-by-side run (one pass, make itest) it does nothing."""

    def __init__(self):
        self.enabled = os.environ.get("DW_SIDE_BY_SIDE") == "1"
        self.waited = 0.0
        # what held a lock exclusively, and how long: {name: seconds}, for the tests' and the
        # modules' serial time (the floor of the side-by-side run, tests/README.md)
        self.alone_tests = {}
        self.alone_modules = {}
        self._held = None
        self._module = None
        self._module_cpus = None
        if self.enabled:
            self.host = RWLock(LOCK_FILE + ".host")
            self.cpu = RWLock(LOCK_FILE + ".cpu")

    def enter_module(self, alone, name, cpus=False):
        """alone: the host exclusively; cpus: the CPUs exclusively too, for the whole module."""
        if self.enabled:
            self.waited += self.host.take(alone)
            self._module = (name, time.monotonic()) if alone else None
            if cpus:
                self.waited += self.cpu.take(True)
            self._module_cpus = (name, time.monotonic()) if cpus else None

    def leave_module(self):
        if self.enabled:
            if self._module_cpus:
                self.cpu.drop()
                self.alone_tests[self._module_cpus[0]] = time.monotonic() - self._module_cpus[1]
                self._module_cpus = None
            self.host.drop()
            if self._module:
                self.alone_modules[self._module[0]] = time.monotonic() - self._module[1]

    def enter_test(self, alone, name):
        if self.enabled and not self._module_cpus:
            self.waited += self.cpu.take(alone)
            # module.method: the class adds nothing to a name that says where the time went
            short = ".".join(name.split(".")[::2]) if name.count(".") == 2 else name
            self._held = (short, time.monotonic()) if alone else None

    def leave_test(self):
        if self.enabled and not self._module_cpus:
            self.cpu.drop()
            if self._held:
                # added: one method of two classes (test_abort's AbortTest and its SockDiag
                # subclass) has one short name
                name, since = self._held
                self.alone_tests[name] = self.alone_tests.get(name, 0.0) + time.monotonic() - since

    def report(self):
        """One line: the serial time this runner held (the side-by-side run's floor), the longest
        holds by name, and what it waited for the others'."""
        def part(held, what):
            top = sorted(held.items(), key=lambda kv: -kv[1])[:4]
            return "%d %s %.0f s%s" % (len(held), what, sum(held.values()),
                                       " (" + ", ".join("%s %.0f s" % kv for kv in top) + ")" if top else "")
        return "side by side: alone on the host %s; alone on the CPUs %s; %.0f s waited for the other pass" % (
            part(self.alone_modules, "modules"), part(self.alone_tests, "tests or modules"), self.waited)


class ModuleQueue:
    """make test runs each backend's pass as several runners (DW_MODULE_QUEUE, tests/run-all.sh):
    every runner walks the same modules in the same order and runs a module only if it is the
    first to claim it, under flock(2) on the queue file that lists the claimed ones. A module
    (its shared daemon, its fixtures) stays in one runner; a runner that finished a long module
    takes the next unclaimed one, so the runners end within about one module of each other with
    no table of durations to keep. Without DW_MODULE_QUEUE every module is this runner's."""

    def __init__(self):
        self.path = os.environ.get("DW_MODULE_QUEUE") or None

    def claim(self, module):
        if not self.path:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r+") as f:
                if module in f.read().split():
                    return False
                f.write(module + "\n")
                return True
        finally:
            os.close(fd)
