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
