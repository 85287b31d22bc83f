"""The BPF programs a benchmark arm holds, and the dw_ programs of anyone else
(another depwatch, someone's integration tests): their traffic runs on the
same hooks, so a run that saw them is marked. Shared by bench/scale.py and
bench/progtime.py (bench/run.sh does the same in shell)."""
import json
import os
import subprocess


def prog_ids(pid):
    """The ids of the BPF programs process pid holds, from its file descriptors."""
    ids = set()
    fddir = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fddir):
        try:
            with open(os.path.join(fddir, fd)) as f:
                ids.update(int(l.split()[1]) for l in f if l.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def loaded():
    """Every BPF program loaded, as bpftool prog show --json lists it."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def dw_others(ids):
    """How many dw_ programs are loaded besides the given ids."""
    return sum(1 for p in loaded() if p.get("name", "").startswith("dw_") and p["id"] not in ids)
