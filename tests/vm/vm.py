#!/usr/bin/env python3
"""Runs a command on another kernel: a Debian kernel package booted under
qemu, the host's root as the guest's (virtio-9p, read-only, under a tmpfs
overlay), bpffs, tracefs and cgroup v2 mounted. As root, from anywhere:

    tests/vm/vm.py [--kernel PKG] [--timeout S] [--cpus N] -- COMMAND [ARG...]
    tests/vm/vm.py [--kernel PKG] --fetch-only

PKG is a Debian package name: a kernel (linux-image-6.1.0-57-amd64) or a
metapackage (linux-image-amd64, linux-image-rt-amd64), resolved to the
kernel it depends on at each run, since the archive moves on. The package
is fetched with `apt-get download` and unpacked with `dpkg -x` under
--out (build/kernels): nothing is installed on the host. The guest's
console is streamed to stdout; the exit status is the command's in the
guest, 124 when the time limit ran out, 125 when the guest never ran it.
qemu is killed on every path (time limit, signal, error) and dies with
this process (PR_SET_PDEATHSIG). Python 3 standard library only.
"""

import argparse
import ctypes
import glob
import os
import re
import selectors
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
EXIT_RE = re.compile(rb"depwatch-vm: exit (\d+)")
# The modules mounting the host's root needs (Debian builds them as modules), the
# rest of each one's dependencies following from modules.dep.
ROOT_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay"]
# Environment the command sees besides what --env gives (the host's PATH: its python3, /usr/sbin).
PASSED_ENV = ["PATH", "LANG", "TERM"]
# Mounted afresh in the guest (tests/vm/init.sh): the host's files there are not seen.
GUEST_TMPFS = ["/tmp", "/run", "/dev"]
GUEST_TIMEOUT_EXIT = 124
NO_RESULT_EXIT = 125


class Failed(Exception):
    pass


def log(msg):
    print("vm: " + msg, file=sys.stderr, flush=True)


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode:
        raise Failed("%s: exit %d: %s" % (" ".join(argv), r.returncode, (r.stderr or r.stdout).strip()))
    return r.stdout


def apt_field(pkg, field):
    out = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg], capture_output=True,
                         text=True).stdout
    m = re.search(r"(?m)^%s: (.*)$" % field, out)
    return m.group(1).strip() if m else None


def resolve(pkg):
    """The kernel package pkg is or depends on, and its version (the package lists are
    refreshed once if they do not know it)."""
    for attempt in (0, 1):
        if apt_field(pkg, "Package"):
            break
        if attempt:
            raise Failed("apt knows no package %s" % pkg)
        log("apt does not know %s: apt-get update" % pkg)
        run(["apt-get", "update", "-qq"])
    name = pkg
    if not apt_field(pkg, "Filename") or not re.match(r"linux-image-\d", pkg):
        deps = apt_field(pkg, "Depends") or ""
        kernels = [d.split()[0] for d in deps.split(",") if re.match(r"\s*linux-image-\d", d)]
        if kernels:
            name = kernels[0].strip()
    version = apt_field(name, "Version")
    if not version:
        raise Failed("cannot resolve %s to a kernel package" % pkg)
    return name, version


def fetch(name, version, out):
    """build/kernels/NAME_VERSION/: the .deb and its unpacked root (with modules.dep)."""
    dest = os.path.join(out, "%s_%s" % (name, version.replace(":", "%3a")))
    root = os.path.join(dest, "root")
    if os.path.exists(os.path.join(dest, ".unpacked")):
        return root
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    # the download sandbox user _apt must be able to write there, or apt warns and does it as root
    log("fetching %s %s (apt-get download)" % (name, version))
    run(["apt-get", "download", "-q", "%s=%s" % (name, version)], cwd=dest)
    debs = glob.glob(os.path.join(dest, "*.deb"))
    if len(debs) != 1:
        raise Failed("apt-get download left %d .deb files in %s" % (len(debs), dest))
    run(["dpkg", "-x", debs[0], root])
    kver = kernel_release(root)
    # dpkg -x runs no maintainer script: the module index the guest's modprobe reads is made here
    run(["busybox", "depmod", "-b", root, kver])
    open(os.path.join(dest, ".unpacked"), "w").close()
    return root


def kernel_release(root):
    vmlinuz = glob.glob(os.path.join(root, "boot", "vmlinuz-*"))
    if len(vmlinuz) != 1:
        raise Failed("%s: expected one boot/vmlinuz-*, found %d" % (root, len(vmlinuz)))
    return os.path.basename(vmlinuz[0])[len("vmlinuz-"):]


def module_order(moddir, wanted):
    """The .ko paths (relative to moddir) to insmod for wanted, each after what it needs."""
    deps, by_name = {}, {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[path] = rest.split()
            by_name[os.path.basename(path)[:-3].replace("-", "_")] = path
    order = []

    def visit(path):
        if path in order:
            return
        for d in deps.get(path, []):
            visit(d)
        order.append(path)

    for name in wanted:
        path = by_name.get(name)
        if path:
            visit(path)
        elif not builtin(moddir, name):
            raise Failed("kernel has no module %s (and does not build it in): it cannot mount the host's root"
                         % name)
    return order


def builtin(moddir, name):
    try:
        with open(os.path.join(moddir, "modules.builtin")) as f:
            return any(os.path.basename(l.strip())[:-3].replace("-", "_") == name for l in f)
    except FileNotFoundError:
        return False


def command_script(argv, cwd, env):
    lines = ["# written by tests/vm/vm.py: the command, in the host's root (the overlay)"]
    for k, v in env.items():
        lines.append("export %s=%s" % (k, shlex.quote(v)))
    lines.append("cd %s || exit 125" % shlex.quote(cwd))
    lines.append(" ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines) + "\n"


def has_interpreter(path):
    """Whether the ELF file at path names a dynamic loader (a PT_INTERP header): not static."""
    with open(path, "rb") as f:
        elf = f.read(64)
        phoff, = struct.unpack_from("<Q", elf, 32)
        phentsize, phnum = struct.unpack_from("<HH", elf, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return any(struct.unpack_from("<I", table, i * phentsize)[0] == 3 for i in range(phnum))


def initramfs(root, kver, script, path):
    """A newc cpio: busybox (static), init.sh as /init, the modules for the root, the command."""
    moddir = os.path.join(root, "lib", "modules", kver)
    busybox = shutil.which("busybox") or "/bin/busybox"
    if has_interpreter(busybox):
        raise Failed("%s is not statically linked: install busybox-static" % busybox)
    with tempfile.TemporaryDirectory(prefix="dw-initramfs-") as d:
        for sub in ("bin", "sbin", "proc", "sys", "dev", "modules", "etc"):
            os.makedirs(os.path.join(d, sub))
        shutil.copy2(busybox, os.path.join(d, "bin", "busybox"))
        for applet in run([busybox, "--list"]).split():
            if applet != "busybox":
                os.symlink("busybox", os.path.join(d, "bin", applet))
        # the kernel's module loader runs /sbin/modprobe
        os.symlink("../bin/busybox", os.path.join(d, "sbin", "modprobe"))
        names = []
        for rel in module_order(moddir, ROOT_MODULES):
            shutil.copy2(os.path.join(moddir, rel), os.path.join(d, "modules"))
            names.append(os.path.basename(rel))
        with open(os.path.join(d, "modules.list"), "w") as f:
            f.write("\n".join(names) + "\n")
        with open(os.path.join(d, "vm.env"), "w") as f:
            f.write("KVER=%s\nKDIR=%s\n" % (shlex.quote(kver), shlex.quote(os.path.abspath(root))))
        with open(os.path.join(d, "cmd.sh"), "w") as f:
            f.write(script)
        shutil.copy2(os.path.join(HERE, "init.sh"), os.path.join(d, "init"))
        os.chmod(os.path.join(d, "init"), 0o755)
        files = run(["find", ".", "-mindepth", "1"], cwd=d)
        with open(path, "wb") as out:
            r = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=d, input=files.encode(),
                               stdout=out, stderr=subprocess.PIPE)
        if r.returncode:
            raise Failed("cpio: %s" % r.stderr.decode().strip())


def die_with_parent():
    """In the child, before exec: qemu gets SIGKILL when this process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def qemu_argv(args, root, kver, initrd):
    accel = "kvm" if args.kvm else "tcg,thread=multi"
    return ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
            "-machine", "q35", "-accel", accel, "-cpu", "host" if args.kvm else "max",
            "-smp", str(args.cpus), "-m", args.mem, "-no-reboot",
            "-kernel", os.path.join(root, "boot", "vmlinuz-" + kver), "-initrd", initrd,
            # warnings with their stack traces on the console (level 4 shows); a soft lockup
            # panics, and the panic ends qemu (-no-reboot): a locked-up guest fails at once, with
            # its trace, instead of at the time limit (seen once on 6.1, both vCPUs)
            "-append", "console=ttyS0 loglevel=5 panic=-1 softlockup_panic=1 mitigations=off",
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-serial", "stdio", "-monitor", "none", "-nic", "none"]


def stop(proc):
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stream(proc, deadline):
    """Copies the console to stdout until qemu ends or deadline; the guest's exit status or None."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    fd = proc.stdout.fileno()
    tail, rc = b"", None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if not sel.select(min(left, 1.0)):
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return rc
        # the serial console's line ends are CR LF, and a read may end between the two
        sys.stdout.buffer.write(chunk.replace(b"\r", b""))
        sys.stdout.flush()
        tail = (tail + chunk)[-256:]
        m = EXIT_RE.search(tail)
        if m:
            rc = int(m.group(1))


def boot(args, root, kver, initrd):
    argv = qemu_argv(args, root, kver, initrd)
    log("booting %s: %s" % (kver, " ".join(shlex.quote(a) for a in argv)))
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=die_with_parent)
    try:
        rc = stream(proc, started + args.timeout)
    finally:
        stop(proc)
    took = time.monotonic() - started
    if rc == "timeout":
        log("the guest ran out of its %d s (killed)" % args.timeout)
        return GUEST_TIMEOUT_EXIT
    if rc is None:
        log("qemu ended (exit %s) after %.0f s without the command's exit status" % (proc.returncode, took))
        return NO_RESULT_EXIT
    log("guest exit %d after %.0f s" % (rc, took))
    return rc


def on_signal(signum, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="linux-image-amd64", help="a Debian kernel package (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for the whole boot and command")
    ap.add_argument("--out", default=os.path.join(REPO, os.environ.get("OUT", "build"), "kernels"),
                    help="where kernels are unpacked (default build/kernels)")
    # One vCPU: with two, multi-threaded TCG twice left a vCPU re-executing a stale int3 of the
    # kernel's text_poke_bp (syscall_trace_enter, as tracepoints were attached) until the soft
    # lockup watchdog fired, 1 100 s into a run. Parallel work runs as guests of their own.
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--mem", default="6G")
    ap.add_argument("--kvm", action="store_true", help="KVM instead of TCG (where /dev/kvm boots a stock kernel)")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="for the command (repeatable)")
    ap.add_argument("--cwd", default=os.getcwd(), help="where the command runs (default: here)")
    ap.add_argument("--fetch-only", action="store_true", help="fetch and unpack the kernel, boot nothing")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()
    if os.geteuid() != 0:
        log("run as root (apt-get download, and the guest runs BPF as root)")
        return 2
    cwd = os.path.realpath(args.cwd)
    hidden = [d for d in GUEST_TMPFS if cwd == d or cwd.startswith(d + "/")]
    if hidden and not args.fetch_only:
        log("%s is under %s, which the guest mounts afresh (a tmpfs): run from a checkout elsewhere"
            % (cwd, hidden[0]))
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    try:
        name, version = resolve(args.kernel)
        log("%s is %s %s" % (args.kernel, name, version))
        root = fetch(name, version, os.path.abspath(args.out))
        if args.fetch_only:
            return 0
        if not args.command:
            log("no command to run in the guest")
            return 2
        kver = kernel_release(root)
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env.update(kv.split("=", 1) for kv in args.env)
        with tempfile.TemporaryDirectory(prefix="dw-vm-") as tmp:
            initrd = os.path.join(tmp, "initramfs.cpio")
            initramfs(root, kver, command_script(args.command, os.path.abspath(args.cwd), env), initrd)
            return boot(args, root, kver, initrd)
    except Failed as e:
        log(str(e))
        return NO_RESULT_EXIT
    except KeyboardInterrupt:
        log("interrupted: qemu stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
