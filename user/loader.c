// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading, probing, pinning and attaching the BPF side. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "cgroups.h"
#include "hooks.h"
#include "loader.h"
#include "log.h"
#include "privs.h"

/* Maps other tools may read, pinned by these names under the pin dir. */
static const char *const pinned_maps[] = { "dest_slots", "dest_stats", "dest_details", "cpu_rows",
					    "globals", "conns", "breakers" };

/* --without NAME: the daemon behaves as on a kernel lacking that hook (tests, and a way out of a broken one). */
static bool withheld(const struct dw_bpf *b, const char *hook)
{
	for (const char *const *w = b->without; w && *w; w++)
		if (!strcmp(*w, hook))
			return true;
	return false;
}

/* Appended to "this kernel lacks X" when the lack is --without's doing. */
static const char *simulated(const struct dw_bpf *b, const char *hook)
{
	return withheld(b, hook) ? " (simulated by --without)" : "";
}

/*
 * Checks every --without name against the backend that runs and writes the
 * one line the daemon logs about them; fails on a name that is no hook of
 * this backend (a typo must not look like a kernel that lacks nothing).
 */
static int check_without(struct dw_bpf *b)
{
	size_t off = 0, len = sizeof(b->without_line);
	bool known;

	for (const char *const *w = b->without; w && *w; w++) {
		const char *loss = dw_hook_loss(b->backend, *w, &known);

		/* without sock_send_length or sock_recv_length the probe fell back to syscalls */
		if (!known && b->backend == DW_BACKEND_SYSCALLS && !strncmp(*w, "sock_", 5) &&
		    strstr(b->backend_why, *w)) {
			known = true;
			loss = "the syscalls backend runs instead of sock (see its support matrix)";
		}
		if (!known) {
			dw_err("--without %s: not a hook of the %s backend (`depwatch run --without list` lists them)",
			       *w, dw_backend_name(b->backend));
			return -EINVAL;
		}
		if (!loss)
			continue;	/* the probe refuses to run with its own error */
		if (off < len)
			off += snprintf(b->without_line + off, len - off, "%s%s: %s", off ? "; " : "", *w, loss);
	}
	if (off && off < len)
		snprintf(b->without_line + off, len - off, "; everything else works");
	return 0;
}

static int pin_dir_open(struct dw_bpf *b, const char *dir)
{
	struct statfs fs;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		dw_err("cannot create pin dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (statfs(dir, &fs) || fs.f_type != BPF_FS_MAGIC) {
		dw_err("pin dir %s is not on a BPF filesystem (mount -t bpf bpf /sys/fs/bpf)", dir);
		return -EINVAL;
	}
	b->pin_dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->pin_dir_fd < 0) {
		dw_err("cannot open pin dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (flock(b->pin_dir_fd, LOCK_EX | LOCK_NB)) {
		dw_err("another depwatch daemon is running on pin dir %s", dir);
		close(b->pin_dir_fd);
		b->pin_dir_fd = -1;
		return -EBUSY;
	}
	snprintf(b->pin_dir, sizeof(b->pin_dir), "%s", dir);
	/* whatever a previous daemon or the admin left: root's only, or --group's to traverse */
	if (dw_own_path(b->pin_dir_fd, NULL, dir, b->group, 0700, 0750))
		return -errno;
	return 0;
}

/* Maps a killed daemon left behind: the lock says nobody uses them, start afresh. */
static void pin_dir_clear(struct dw_bpf *b)
{
	int removed = 0;

	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		if (unlinkat(b->pin_dir_fd, pinned_maps[i], 0) == 0)
			removed++;
	if (removed)
		dw_notice("removed %d pinned maps left in %s by a previous daemon", removed, b->pin_dir);
}

static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp)
{
	char name[96];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

/* A classic tracepoint under tracefs (libbpf attaches through it), wherever tracefs is mounted. */
static bool kernel_has_syscall_tracepoint(const char *event)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[160];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/%s", roots[i], event);
		if (!access(path, F_OK))
			return true;
	}
	return false;
}

static void no_autoload(struct dw_bpf *b, const char *name)
{
	bpf_program__set_autoload(bpf_object__find_program_by_name(b->skel->obj, name), false);
}

/* The sock backend when the kernel has its tracepoints, unless --backend says otherwise. */
static void choose_backend(struct dw_bpf *b, const struct btf *vmlinux, const char *want)
{
	const char *missing = NULL;

	if (!kernel_has_tracepoint(vmlinux, "sock_send_length") || withheld(b, "sock_send_length"))
		missing = "sock_send_length";
	else if (!kernel_has_tracepoint(vmlinux, "sock_recv_length") || withheld(b, "sock_recv_length"))
		missing = "sock_recv_length";

	if (want && !dw_backend_parse(want, &b->backend)) {
		snprintf(b->backend_why, sizeof(b->backend_why), "forced by --backend");
		return;
	}
	b->backend = missing ? DW_BACKEND_SYSCALLS : DW_BACKEND_SOCK;
	snprintf(b->backend_why, sizeof(b->backend_why), "kernel %s %s%s", missing ? "lacks" : "has",
		 missing ? missing : "sock_send_length", missing ? simulated(b, missing) : "");
}

/* The syscalls backend's tracepoints; fails when a required one is missing. */
static int probe_syscalls(struct dw_bpf *b)
{
	char enter[64], exit[64], hook[64];
	int err = 0;

	for (size_t i = 0; i < dw_nsyscall_specs; i++) {
		const struct dw_syscall_spec *spec = &dw_syscall_specs[i];
		struct dw_prog_status *ps = &b->progs[b->nprogs++];

		ps->name = spec->enter;
		ps->hook = spec->name;
		ps->required = spec->required;
		ps->syscall = true;
		snprintf(enter, sizeof(enter), "sys_enter_%s", spec->name);
		snprintf(exit, sizeof(exit), "sys_exit_%s", spec->name);
		snprintf(hook, sizeof(hook), "syscalls/%s", spec->name);
		if (withheld(b, hook)) {
			snprintf(ps->why, sizeof(ps->why), "absent (--without): calls made with %s() are not seen",
				 spec->name);
			if (spec->required) {
				dw_err("the syscalls backend cannot run without %s (simulated by --without): "
				       "it is how most programs send and receive", hook);
				err = -ENOTSUP;
			}
			continue;
		}
		if (kernel_has_syscall_tracepoint(enter) && kernel_has_syscall_tracepoint(exit))
			continue;
		snprintf(ps->why, sizeof(ps->why), "no tracepoint syscalls/%s in tracefs", enter);
		if (spec->required) {
			dw_err("the syscalls backend needs the tracepoint syscalls/%s: not under "
			       "/sys/kernel/tracing/events or /sys/kernel/debug/tracing/events "
			       "(tracefs not mounted, or a kernel without CONFIG_FTRACE_SYSCALLS)",
			       enter);
			err = -ENOTSUP;
		}
	}
	return err;
}

/* A program another one stands in for, which is loaded: it is not needed. */
static bool superseded(const struct dw_bpf *b, const char *name)
{
	for (int i = 0; i < b->nprogs; i++) {
		const struct dw_prog_status *ps = &b->progs[i];

		for (size_t j = 0; j < dw_nprog_specs; j++)
			if (!strcmp(dw_prog_specs[j].name, ps->name) && dw_prog_specs[j].instead_of &&
			    !strcmp(dw_prog_specs[j].instead_of, name) && !ps->why[0])
				return true;
	}
	return false;
}

/*
 * The abort iterator needs the bpf_sock_destroy kfunc (Linux 6.5+); without
 * it (or with --without sock_destroy) dw_abort is not loaded and
 * b->abort_why says why.
 */
static void probe_abort(struct dw_bpf *b, const struct btf *vmlinux)
{
	if (withheld(b, HOOK_ABORT))
		snprintf(b->abort_why, sizeof(b->abort_why), "absent (--without)");
	else if (btf__find_by_name_kind(vmlinux, "bpf_sock_destroy", BTF_KIND_FUNC) <= 0)
		snprintf(b->abort_why, sizeof(b->abort_why),
			 "this kernel has no kfunc bpf_sock_destroy (Linux 6.5+)");
	if (b->abort_why[0])
		no_autoload(b, "dw_abort");
}

/* Picks the backend and the tracing programs to load; fails when a required one cannot be. */
static int probe_programs(struct dw_bpf *b, const char *want)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int err = 0;

	if (!vmlinux) {
		dw_err("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
		return -ENOENT;
	}
	choose_backend(b, vmlinux, want);
	err = check_without(b);
	if (err) {
		btf__free(vmlinux);
		return err;
	}
	for (size_t i = 0; i < dw_nprog_specs; i++) {
		const struct dw_prog_spec *spec = &dw_prog_specs[i];
		struct dw_prog_status *ps;

		if (!(spec->backends & (1u << b->backend)) || superseded(b, spec->name)) {
			no_autoload(b, spec->name);
			continue;
		}
		ps = &b->progs[b->nprogs++];
		ps->name = spec->name;
		ps->hook = spec->tracepoint;
		ps->required = spec->required;
		if (kernel_has_tracepoint(vmlinux, spec->tracepoint) && !withheld(b, spec->tracepoint))
			continue;
		no_autoload(b, spec->name);
		snprintf(ps->why, sizeof(ps->why), "%s%s%s",
			 withheld(b, spec->tracepoint) ? "absent (--without)" : "tracepoint not in this kernel",
			 spec->without ? ": " : "", spec->without ? spec->without : "");
		if (spec->required && spec->backends == DW_ON_SOCK) {
			dw_err("this kernel lacks the tracepoint %s%s, which the sock backend needs "
			       "(Linux 6.3+); --backend syscalls does without",
			       spec->tracepoint, simulated(b, spec->tracepoint));
			err = -ENOTSUP;
		} else if (spec->required) {
			dw_err("this kernel lacks the tracepoint %s%s, which depwatch needs: it is how "
			       "connects and closes are seen",
			       spec->tracepoint, simulated(b, spec->tracepoint));
			err = -ENOTSUP;
		}
	}
	probe_abort(b, vmlinux);
	btf__free(vmlinux);
	if (!b->max_conns)
		b->max_conns = bpf_map__max_entries(b->skel->maps.pending);
	bpf_map__set_max_entries(b->skel->maps.pending, b->max_conns);
	bpf_map__set_max_entries(b->skel->maps.pending_free, b->max_conns);
	b->skel->rodata->dw_max_pend = b->max_conns;
	if (b->backend == DW_BACKEND_SYSCALLS) {
		if (!err)
			err = probe_syscalls(b);
		bpf_map__set_max_entries(b->skel->maps.conns_sk, b->max_conns);
	} else {
		for (size_t i = 0; i < dw_nsyscalls_only; i++)
			no_autoload(b, dw_syscalls_only[i]);
		/* one set of maps: the syscalls backend's need no room here */
		bpf_map__set_max_entries(b->skel->maps.sys_calls, 1);
		bpf_map__set_max_entries(b->skel->maps.conns_sk, 1);
	}
	b->skel->rodata->dw_backend = b->backend;
	return err;
}

/* *refused: the kernel's verifier or loader said no (as opposed to a probe finding a lack). */
static int load_skeleton(struct dw_bpf *b, const char *backend, bool enforce, bool abort,
			 bool *refused)
{
	int err;

	*refused = false;
	b->nprogs = 0;
	b->skel = depwatch_bpf__open();
	if (!b->skel) {
		dw_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	bpf_map__set_max_entries(b->skel->maps.dest_slots, b->max_dests);
	bpf_map__set_max_entries(b->skel->maps.dest_stats, b->max_dests);
	bpf_map__set_max_entries(b->skel->maps.dest_details, b->max_dests);
	/* a row per (slot, CPU): struct dw_cpu_row; dw_bpf_start checked that it fits a u32 */
	bpf_map__set_max_entries(b->skel->maps.cpu_rows, b->max_dests * (__u32)b->ncpus);
	bpf_map__set_max_entries(b->skel->maps.caller_cpu_rows,
				 DW_CALLER_ROWS_DEFAULT * (__u32)b->ncpus);
	b->skel->rodata->dw_ncpus = b->ncpus;
	bpf_map__set_max_entries(b->skel->maps.slot_cfg, b->max_dests);
	b->skel->rodata->dw_max_slots = b->max_dests;
	err = probe_programs(b, backend);
	if (err)
		return err;
	bpf_program__set_autoload(b->skel->progs.dw_enforce4, enforce);
	bpf_program__set_autoload(b->skel->progs.dw_enforce6, enforce);
	if (!abort && !b->abort_why[0])
		snprintf(b->abort_why, sizeof(b->abort_why), "the kernel refused the program");
	if (b->abort_why[0])
		no_autoload(b, "dw_abort");
	err = depwatch_bpf__load(b->skel);
	*refused = err != 0;
	return err;
}

/*
 * Enforcement is optional: a kernel that refuses the cgroup programs
 * (bpf_set_retval is 5.18+) still gets everything else, and the start
 * line says why enforcement is missing.
 */
static int open_and_load(struct dw_bpf *b, const char *backend)
{
	bool refused;
	int err = load_skeleton(b, backend, true, true, &refused);

	if (refused && !b->abort_why[0]) {
		dw_warn("the kernel refused the BPF object with the abort iterator (%s); loading it without it",
			strerror(-err));
		depwatch_bpf__destroy(b->skel);
		err = load_skeleton(b, backend, true, false, &refused);
	}
	if (refused) {
		dw_warn("the kernel refused the BPF object with the enforcement programs (%s); loading it without them",
			strerror(-err));
		depwatch_bpf__destroy(b->skel);
		err = load_skeleton(b, backend, false, false, &refused);
	}
	if (refused)
		dw_err("cannot load the BPF programs: %s", strerror(-err));
	if (err)
		return err;
	b->stats_fd = bpf_map__fd(b->skel->maps.dest_stats);
	b->globals_fd = bpf_map__fd(b->skel->maps.globals);
	return 0;
}

static int pin_maps(struct dw_bpf *b)
{
	char path[300];

	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(b->skel->obj, pinned_maps[i]);
		int err;

		snprintf(path, sizeof(path), "%s/%s", b->pin_dir, pinned_maps[i]);
		err = bpf_map__pin(map, path);
		if (err) {
			dw_err("cannot pin map %s: %s", path, strerror(-err));
			return err;
		}
		/* bpffs makes pins 0600 root; --group readers open them with BPF_F_RDONLY */
		if (dw_own_path(b->pin_dir_fd, pinned_maps[i], path, b->group, 0600, 0640))
			return -errno;
	}
	return 0;
}

static void unpin_maps(struct dw_bpf *b)
{
	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		unlinkat(b->pin_dir_fd, pinned_maps[i], 0);
}

/* The exit first: an entry remembered is always forgotten at its exit. */
static void attach_syscall(struct dw_bpf *b, struct dw_prog_status *ps, struct bpf_program *enter)
{
	char tp[64];

	if (ps->why[0])
		return;		/* no such tracepoint */
	snprintf(tp, sizeof(tp), "sys_exit_%s", ps->hook);
	ps->exit_link = bpf_program__attach_tracepoint(b->skel->progs.dw_sys_exit, "syscalls", tp);
	if (ps->exit_link) {
		snprintf(tp, sizeof(tp), "sys_enter_%s", ps->hook);
		ps->link = bpf_program__attach_tracepoint(enter, "syscalls", tp);
	}
	if (!ps->exit_link || !ps->link) {
		snprintf(ps->why, sizeof(ps->why), "attach to syscalls/%s failed: %s", tp,
			 strerror(errno));
		bpf_link__destroy(ps->exit_link);
		ps->exit_link = NULL;
		return;
	}
	ps->attached = true;
}

static void attach_tracing(struct dw_bpf *b)
{
	for (int i = 0; i < b->nprogs; i++) {
		struct dw_prog_status *ps = &b->progs[i];
		struct bpf_program *prog = bpf_object__find_program_by_name(b->skel->obj, ps->name);
		struct bpf_link *link;

		if (ps->syscall) {
			attach_syscall(b, ps, prog);
			continue;
		}
		if (!bpf_program__autoload(prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			snprintf(ps->why, sizeof(ps->why), "attach failed: %s", strerror(errno));
			continue;
		}
		ps->attached = true;
		ps->link = link;
		if (prog == b->skel->progs.dw_data_ready)
			b->skel->bss->dw_data_ready_on = 1;
	}
}

/* Enforcement is optional: without it depwatch still watches, and the start line says why not. */
static void attach_enforce(struct dw_bpf *b, const char *want)
{
	struct bpf_program *progs[2] = { b->skel->progs.dw_enforce4, b->skel->progs.dw_enforce6 };
	static const char *const hooks[2] = { "cgroup/connect4", "cgroup/connect6" };
	char path[256];
	int fd, err = 0;

	if (want && *want)
		snprintf(path, sizeof(path), "%s", want);
	else
		err = dw_cgroup2_mount(NULL, path, sizeof(path));	/* /sys/fs/cgroup, or .../unified */
	fd = err ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 2; i++) {
		struct dw_prog_status *ps = &b->progs[b->nprogs++];

		ps->name = bpf_program__name(progs[i]);
		ps->hook = hooks[i];
		if (!bpf_program__autoload(progs[i])) {
			snprintf(ps->why, sizeof(ps->why),
				 "the kernel refused the program (enforcement needs Linux 5.18+): breakers are judged, not enforced");
			continue;
		}
		if (withheld(b, hooks[i])) {
			snprintf(ps->why, sizeof(ps->why), "absent (--without): %s", dw_other_hooks[i].without);
			continue;
		}
		if (err || fd < 0) {
			snprintf(ps->why, sizeof(ps->why), "no cgroup v2 directory %s: %s", err ? "mounted" : path,
				 strerror(err ? -err : errno));
			continue;
		}
		ps->link = bpf_program__attach_cgroup(progs[i], fd);
		if (!ps->link) {
			snprintf(ps->why, sizeof(ps->why), "attach to %s failed: %s", path, strerror(errno));
			continue;
		}
		ps->attached = true;
		snprintf(b->cgroup, sizeof(b->cgroup), "%s", path);
	}
	if (fd >= 0)
		close(fd);
}

/* iter/tcp adopts the connections open at start; it runs once, in dw_bpf_classify_existing. */
static void note_adopt(struct dw_bpf *b)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];

	ps->name = bpf_program__name(b->skel->progs.dw_classify);
	ps->hook = HOOK_ADOPT;
	ps->attached = !withheld(b, HOOK_ADOPT);
	if (!ps->attached)
		snprintf(ps->why, sizeof(ps->why), "absent (--without): %s", dw_other_hooks[2].without);
}

/* The abort iterator's link, made once here, run by dw_bpf_abort_link()'s users on demand. */
static void attach_abort(struct dw_bpf *b)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];

	ps->name = bpf_program__name(b->skel->progs.dw_abort);
	ps->hook = HOOK_ABORT;
	if (b->abort_why[0]) {
		snprintf(ps->why, sizeof(ps->why), "%s: %s", b->abort_why, dw_other_hooks[3].without);
		return;
	}
	ps->link = bpf_program__attach_iter(b->skel->progs.dw_abort, NULL);
	if (!ps->link) {
		snprintf(b->abort_why, sizeof(b->abort_why), "attach failed: %s", strerror(errno));
		snprintf(ps->why, sizeof(ps->why), "%s: %s", b->abort_why, dw_other_hooks[3].without);
		return;
	}
	ps->attached = true;
	b->abort_link = ps->link;
}

static int required_attached(const struct dw_bpf *b)
{
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].required && !b->progs[i].attached) {
			dw_err("cannot attach %s (%s%s): %s", b->progs[i].name,
			       b->progs[i].syscall ? "syscalls/" : "", b->progs[i].hook,
			       b->progs[i].why);
			return -ENOTSUP;
		}
	return 0;
}

static int map_pending(struct dw_bpf *b, unsigned rows);

int dw_bpf_start(struct dw_bpf *b, const struct dw_bpf_opts *opts)
{
	int err;

	memset(b, 0, sizeof(*b));
	b->pin_dir_fd = -1;
	b->max_dests = opts->max_dests;
	b->keep_pinned = opts->keep_pinned;
	b->max_conns = opts->max_conns;
	b->without = opts->without;
	b->group = opts->group;
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0) {
		dw_err("cannot count the CPUs: %s", strerror(-b->ncpus));
		return -EINVAL;
	}
	if ((uint64_t)b->max_dests * b->ncpus > UINT32_MAX / 2) {
		dw_err("--max-dests %u x %d CPUs: too many per-CPU rows; lower --max-dests",
		       b->max_dests, b->ncpus);
		return -EINVAL;
	}
	err = pin_dir_open(b, opts->pin_dir);
	if (err)
		return err;
	pin_dir_clear(b);
	err = open_and_load(b, opts->backend);
	if (!err)
		err = dw_bpf_map_details(b, 1);
	if (!err)
		err = map_pending(b, 1);
	if (!err)
		err = pin_maps(b);
	if (!err && opts->before_attach)
		err = opts->before_attach(b, opts->arg);
	if (!err) {
		attach_tracing(b);
		err = required_attached(b);
	}
	if (!err) {
		attach_enforce(b, opts->cgroup);
		note_adopt(b);
		attach_abort(b);
	}
	if (err)
		dw_bpf_stop(b);
	return err;
}

void dw_bpf_stop(struct dw_bpf *b)
{
	if (b->pending)
		munmap((void *)b->pending, b->pending_len);
	b->pending = NULL;
	b->pending_rows = 0;
	if (b->details)
		munmap((void *)b->details, b->details_len);
	b->details = NULL;
	b->details_rows = 0;
	if (b->cpu_rows)
		munmap((void *)b->cpu_rows, b->cpu_rows_len);
	b->cpu_rows = NULL;
	b->cpu_rows_slots = 0;
	if (b->caller_rows)
		munmap((void *)b->caller_rows, b->caller_rows_len);
	b->caller_rows = NULL;
	b->caller_rows_n = 0;
	b->abort_link = NULL;
	if (b->callers)
		munmap((void *)b->callers, b->callers_len);
	b->callers = NULL;
	b->callers_rows = 0;
	for (int i = 0; i < b->nprogs; i++) {
		bpf_link__destroy(b->progs[i].link);
		b->progs[i].link = NULL;
		bpf_link__destroy(b->progs[i].exit_link);
		b->progs[i].exit_link = NULL;
	}
	if (b->skel)
		depwatch_bpf__destroy(b->skel);
	b->skel = NULL;
	if (b->pin_dir_fd >= 0 && !b->keep_pinned) {
		unpin_maps(b);
		rmdir(b->pin_dir);
	}
	if (b->pin_dir_fd >= 0)
		close(b->pin_dir_fd);
	b->pin_dir_fd = -1;
}

static void append(char *buf, size_t len, size_t *off, const char *fmt, const char *a, const char *b)
{
	if (*off < len)
		*off += snprintf(buf + *off, len - *off, fmt, a, b);
}

void dw_bpf_describe(const struct dw_bpf *b, char *buf, size_t len)
{
	size_t off = 0;
	int missing = 0, syscalls = 0;

	append(buf, len, &off, "attached:%s%s", "", "");
	/* the system calls as one group: syscalls/{sendto,...} */
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].attached && b->progs[i].syscall)
			append(buf, len, &off, syscalls++ ? ",%s%s" : " syscalls/{%s%s",
			       b->progs[i].hook, "");
	if (syscalls)
		append(buf, len, &off, "}%s%s", "", "");
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].attached && !b->progs[i].syscall)
			append(buf, len, &off, " %s%s", b->progs[i].hook, "");
	append(buf, len, &off, "; not attached:%s%s", "", "");
	for (int i = 0; i < b->nprogs; i++) {
		if (b->progs[i].attached)
			continue;
		missing++;
		append(buf, len, &off, " %s%s", b->progs[i].syscall ? "syscalls/" : "",
		       b->progs[i].hook);
		append(buf, len, &off, " (%s)%s", b->progs[i].why, "");
	}
	if (!missing)
		append(buf, len, &off, " none%s%s", "", "");
}

/* Runs an iterator that writes nothing, for what its program does. */
static int run_iter(struct bpf_link *link)
{
	int fd = bpf_iter_create(bpf_link__fd(link));
	char buf[256];
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n < 0 ? -errno : 0;
}

int dw_bpf_classify_existing(struct dw_bpf *b)
{
	struct bpf_link *link;
	int err;

	if (withheld(b, HOOK_ADOPT))
		return 0;
	link = bpf_program__attach_iter(b->skel->progs.dw_classify, NULL);
	if (!link)
		return -errno;
	b->skel->bss->classify_pass = 1;
	err = run_iter(link);
	b->skel->bss->classify_pass = 2;
	if (!err)
		err = run_iter(link);
	bpf_link__destroy(link);
	return err;
}

int dw_bpf_map_fd(const struct dw_bpf *b, enum dw_bpf_map map)
{
	switch (map) {
	case DW_MAP_DEP_CFG:
		return bpf_map__fd(b->skel->maps.dep_cfg);
	case DW_MAP_DEP_MATCH:
		return bpf_map__fd(b->skel->maps.dep_match);
	case DW_MAP_SERVICE_PORTS:
		return bpf_map__fd(b->skel->maps.service_ports);
	case DW_MAP_SLOT_CFG:
		return bpf_map__fd(b->skel->maps.slot_cfg);
	case DW_MAP_BREAKERS:
		return bpf_map__fd(b->skel->maps.breakers);
	}
	return -EINVAL;
}

void dw_bpf_set_services_on(struct dw_bpf *b, bool on)
{
	b->skel->bss->dw_services_on = on;
}

int dw_bpf_for_each_slot(struct dw_bpf *b, dw_slot_fn fn, void *arg)
{
	unsigned n = dw_bpf_slots_used(b);
	int err = dw_bpf_map_details(b, n);

	if (err)
		return err;
	/* slot 0 (overflow) keeps the defaults; a slot with no dest yet is filled by the kernel */
	for (__u32 slot = 1; slot < n && slot < b->details_rows; slot++) {
		const struct dw_dest_key *dest = &b->details[slot].dest;

		if (dest->family == DW_FAMILY_OVERFLOW)
			continue;
		err = fn(slot, dest, arg);
		if (err)
			return err;
	}
	return 0;
}

/*
 * An array map read in place, read-only: without a system call per row.
 * Only the rows in use so far (and a quarter more) are mapped: the kernel
 * maps every page of a mapping at once, and the whole array in the
 * daemon's RSS would be its full size from the start.
 */
struct mapped_rows {
	const char *name;
	int fd;
	size_t row_size, max_rows;
	void **ptr;
	size_t *len;
	unsigned *rows;
};

static int map_rows(const struct mapped_rows *m, unsigned want)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len, max_len;
	void *p;

	if (want <= *m->rows)
		return 0;
	want += want / 4 + 64;
	max_len = (m->max_rows * m->row_size + page - 1) / page * page;
	len = ((size_t)want * m->row_size + page - 1) / page * page;
	if (len > max_len)
		len = max_len;
	/* the old mapping goes first: both at once would count twice in the peak RSS */
	if (*m->ptr)
		munmap(*m->ptr, *m->len);
	*m->ptr = NULL;
	*m->rows = 0;
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, m->fd, 0);
	if (p == MAP_FAILED) {
		dw_err("cannot map %s: %s", m->name, strerror(errno));
		return -errno;
	}
	*m->ptr = p;
	*m->len = len;
	*m->rows = len / m->row_size < m->max_rows ? len / m->row_size : m->max_rows;
	return 0;
}

int dw_bpf_map_details(struct dw_bpf *b, unsigned rows)
{
	struct mapped_rows m = { "dest_details", bpf_map__fd(b->skel->maps.dest_details),
				 sizeof(struct dw_dest_detail), b->max_dests, (void **)&b->details,
				 &b->details_len, &b->details_rows };

	return map_rows(&m, rows);
}

int dw_bpf_map_cpu_rows(struct dw_bpf *b, unsigned slots)
{
	/* one "row" here is a slot's ncpus rows: they are read together */
	struct mapped_rows m = { "cpu_rows", bpf_map__fd(b->skel->maps.cpu_rows),
				 sizeof(struct dw_cpu_row) * b->ncpus, b->max_dests,
				 (void **)&b->cpu_rows, &b->cpu_rows_len, &b->cpu_rows_slots };

	return map_rows(&m, slots);
}

/* The per-CPU rows of caller rows 0 .. rows-1 (struct dw_caller_cpu_row), ncpus per row. */
static int map_caller_rows(struct dw_bpf *b, unsigned rows)
{
	struct mapped_rows m = { "caller_cpu_rows", bpf_map__fd(b->skel->maps.caller_cpu_rows),
				 sizeof(struct dw_caller_cpu_row) * b->ncpus,
				 DW_CALLER_ROWS_DEFAULT,
				 (void **)&b->caller_rows, &b->caller_rows_len, &b->caller_rows_n };

	return map_rows(&m, rows);
}

int dw_bpf_map_callers(struct dw_bpf *b, unsigned *rows)
{
	struct mapped_rows m = { "caller_stats", bpf_map__fd(b->skel->maps.caller_stats),
				 sizeof(struct dw_caller_stats), DW_CALLER_ROWS_DEFAULT,
				 (void **)&b->callers, &b->callers_len, &b->callers_rows };
	/* row 0 and those handed out; racing claims may push the counter past the end */
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_callers_taken + 1;
	int err;

	if (n > DW_CALLER_ROWS_DEFAULT)
		n = DW_CALLER_ROWS_DEFAULT;
	*rows = 0;
	if (n <= 1)
		return 0;
	err = map_rows(&m, n);
	if (!err)
		err = map_caller_rows(b, n);
	if (err)
		return err;
	*rows = n < b->callers_rows ? n : b->callers_rows;
	if (*rows > b->caller_rows_n)
		*rows = b->caller_rows_n;
	return 0;
}

/* The pending table, likewise: up to the entries handed out so far. */
static int map_pending(struct dw_bpf *b, unsigned rows)
{
	struct mapped_rows m = { "the pending table", bpf_map__fd(b->skel->maps.pending),
				 sizeof(struct dw_pending_entry), b->max_conns, (void **)&b->pending,
				 &b->pending_len, &b->pending_rows };

	return map_rows(&m, rows);
}

unsigned dw_bpf_slots_used(const struct dw_bpf *b)
{
	/* slot 0 and those handed out; racing claims may push the counter past the end */
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_slots_taken + 1;

	return n < b->max_dests ? n : b->max_dests;
}

int dw_bpf_scan_pending(struct dw_bpf *b, dw_pending_fn fn, void *arg)
{
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_pend_taken;
	int err = map_pending(b, n);

	if (err)
		return err;
	if (n > b->pending_rows)
		n = b->pending_rows;	/* racing takers push the counter past the end */
	for (unsigned i = 0; i < n; i++) {
		struct dw_pending_entry e = ((volatile const struct dw_pending_entry *)b->pending)[i];

		if ((!e.call_start_ns && !e.connect_start_ns) || e.slot >= b->details_rows)
			continue;
		fn(&e, &b->details[e.slot].dest, arg);
	}
	return 0;
}

int dw_bpf_globals(struct dw_bpf *b, struct dw_global_stats *out)
{
	struct dw_global_stats per_cpu[b->ncpus];
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	memset(per_cpu, 0, sizeof(per_cpu));	/* valgrind cannot see the kernel write per-CPU values */
	if (bpf_map_lookup_elem(b->globals_fd, &zero, per_cpu))
		return -errno;
	for (int i = 0; i < b->ncpus; i++) {
#define SUM_GLOBAL(field, metric, help) out->field += per_cpu[i].field;
		DW_GLOBAL_COUNTERS(SUM_GLOBAL)
#undef SUM_GLOBAL
	}
	return 0;
}
