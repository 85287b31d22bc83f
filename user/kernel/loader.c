// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loading, pinning and attaching the BPF side (what to load is probe.c's, and
 * the optional parts' parts.c's); its maps are read in maprows.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "dns/dnsmsg.h"
#include "host/cgroups.h"
#include "kernel/hooks.h"
#include "kernel/loader.h"
#include "kernel/maprows.h"
#include "kernel/parts.h"
#include "host/log.h"
#include "host/privs.h"
#include "kernel/probe.h"

/* Maps other tools may read, pinned by these names under the pin dir. */
static const char *const pinned_maps[] = { "dest_slots", "dest_stats", "dest_details", "cpu_rows",
					    "globals", "conns", "breakers" };

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

/*
 * The TLS plaintext's walk (dw_tls_walk, bpf/tls/walk.bpf.c) is tail-called
 * from OpenSSL's and Go's uprobes through tls_walkers[0]; attached to nothing
 * (it has no row in user/discovery/tls/attach.c's table).
 */
static int tls_walker_in(struct dw_bpf *b)
{
	int fd = bpf_program__fd(b->skel->progs.dw_tls_walk);
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.tls_walkers), &zero, &fd, BPF_ANY)) {
		dw_err("cannot put the TLS plaintext walker in tls_walkers: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * -v: how many instructions the verifier processed for each program, the figure a start's time
 * is made of (tests/README.md, issue 45), from the kernel's own record of the load (5.16+; a
 * kernel without it says 0). No verifier log: a log large enough would be refused (ENOSPC).
 */
static void verifier_stats_print(struct dw_bpf *b)
{
	struct bpf_program *p;
	unsigned long long all = 0;
	unsigned n = 0;

	if (!dw_verbose)
		return;
	bpf_object__for_each_program(p, b->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		dw_info("verifier: %s: %u instructions processed", bpf_program__name(p), info.verified_insns);
		all += info.verified_insns;
		n++;
	}
	dw_info("verifier: %llu instructions processed for %u programs", all, n);
}

/* *refused: the kernel's verifier or loader said no (as opposed to a probe finding a lack). */
static int load_skeleton(struct dw_bpf *b, const char *backend, bool *refused)
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
	err = dw_bpf_probe(b, backend);
	if (err)
		return err;
	dw_bpf_parts_decide(b);
	err = depwatch_bpf__load(b->skel);
	if (!err)
		verifier_stats_print(b);
	*refused = err != 0;
	return err;
}

/* Loads the object; on a refusal, again without the next optional part still in it (parts.c). */
static int open_and_load(struct dw_bpf *b, const char *backend)
{
	bool refused;
	int err = load_skeleton(b, backend, &refused);

	while (refused && dw_bpf_part_drop(b, err)) {
		depwatch_bpf__destroy(b->skel);
		err = load_skeleton(b, backend, &refused);
	}
	if (refused)
		dw_err("cannot load the BPF programs: %s", strerror(-err));
	if (err)
		return err;
	b->stats_fd = bpf_map__fd(b->skel->maps.dest_stats);
	b->globals_fd = bpf_map__fd(b->skel->maps.globals);
	return b->tls_on ? tls_walker_in(b) : 0;
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
	ps->exit_link = bpf_program__attach_tracepoint(
		bpf_object__find_program_by_name(b->skel->obj, ps->exit), "syscalls", tp);
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
	struct bpf_program *progs[4] = { b->skel->progs.dw_enforce4, b->skel->progs.dw_enforce6,
					 b->skel->progs.dw_enforce_send4, b->skel->progs.dw_enforce_send6 };
	static const char *const hooks[4] = { HOOK_CONNECT4, HOOK_CONNECT6, HOOK_SENDMSG4, HOOK_SENDMSG6 };
	char path[256];
	int fd, err = 0;

	if (want && *want)
		snprintf(path, sizeof(path), "%s", want);
	else
		err = dw_cgroup2_mount(NULL, path, sizeof(path));	/* /sys/fs/cgroup, or .../unified */
	fd = err ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 4; i++) {
		struct dw_prog_status *ps = &b->progs[b->nprogs++];

		ps->name = bpf_program__name(progs[i]);
		ps->hook = hooks[i];
		if (dw_bpf_part_refused(b, DW_PART_ENFORCE, ps->why, sizeof(ps->why)))
			continue;
		if (dw_bpf_withheld(b, hooks[i])) {
			dw_hook_off_why(ps->why, sizeof(ps->why), hooks[i], NULL);
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

/*
 * The close path (issue 48) on the cgroup v2 directory, once DNS is on
 * (dns_why NULL): without it DNS still works, its unanswered queries
 * ending at their dns_timeout; the start line says which.
 */
static void attach_dns_close(struct dw_bpf *b, const char *dns_why, int fd, const char *path)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];

	ps->name = "dw_dns_release";
	ps->hook = HOOK_DNS_CLOSE;
	if (dns_why)
		snprintf(ps->why, sizeof(ps->why), "%s", dns_why);
	else if (dw_bpf_withheld(b, HOOK_DNS_CLOSE))
		dw_hook_off_why(ps->why, sizeof(ps->why), HOOK_DNS_CLOSE, NULL);
	else if (dw_bpf_part_refused(b, DW_PART_DNS_CLOSE, ps->why, sizeof(ps->why)))
		;
	else if (!(ps->link = bpf_program__attach_cgroup(b->skel->progs.dw_dns_release, fd)))
		snprintf(ps->why, sizeof(ps->why), "attach to %.200s failed: %s: %s", path, strerror(errno),
			 dw_other_hook_loss(HOOK_DNS_CLOSE));
	ps->attached = ps->link != NULL;
}

/*
 * DNS over UDP (issue 35), off the packet path (issue 46): on the sock
 * backend the query program (dw_dns_send, sock_send_length) with
 * sk_data_ready's UDP branch for the answers; on the syscalls backend the
 * system calls' programs read both, nothing of DNS's own to attach. One
 * line in the start line, hook "dns". The close program goes on the cgroup
 * v2 directory of enforcement (the root: every process). The dns_ports map
 * is the daemon's to fill (user/dns/dnsports.c, before anything attaches).
 */
static void attach_dns(struct dw_bpf *b, const char *want)
{
	static const char loss[] = "DNS queries over UDP are not calls";
	struct dw_prog_status *ps = &b->progs[b->nprogs++];
	bool sock = b->backend == DW_BACKEND_SOCK;
	/* the sock backend's queries: its own program, or dw_send's UDP branch (parts.c) */
	bool own = sock && bpf_program__autoload(b->skel->progs.dw_dns_send);
	char path[256], why[sizeof(ps->why)];
	int fd = -1, err = 0;

	ps->name = own ? "dw_dns_send" : sock ? "dw_send" : "dw_sys_*";
	ps->hook = HOOK_DNS;
	if (dw_bpf_part_refused(b, DW_PART_DNS, ps->why, sizeof(ps->why)))
		;
	else if (dw_bpf_withheld(b, HOOK_DNS))
		dw_hook_off_why(ps->why, sizeof(ps->why), HOOK_DNS, NULL);
	else if (!b->skel->rodata->dw_dns_on)
		snprintf(ps->why, sizeof(ps->why), "no sk_data_ready for the answers (Linux 6.6+): %s", loss);
	else if (own && !(ps->link = bpf_program__attach(b->skel->progs.dw_dns_send)))
		snprintf(ps->why, sizeof(ps->why), "attach to sock_send_length failed: %s: %s", strerror(errno), loss);
	ps->attached = !ps->why[0];
	if (want && *want)
		snprintf(path, sizeof(path), "%s", want);
	else
		err = dw_cgroup2_mount(NULL, path, sizeof(path));
	if (!err)
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(why, sizeof(why), "%s", ps->why);
	attach_dns_close(b, ps->attached ? NULL : why, fd, err ? "(no cgroup v2 mount)" : path);
	if (fd >= 0)
		close(fd);
}

/* Whether DNS queries are calls: its line attached. */
bool dw_bpf_dns_on(const struct dw_bpf *b)
{
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].attached && b->progs[i].hook && !strcmp(b->progs[i].hook, HOOK_DNS))
			return true;
	return false;
}

/*
 * Once a poll: fails the DNS queries past their dns_timeout (the sweep, run
 * in the kernel on this CPU by BPF_PROG_TEST_RUN; it is attached nowhere).
 * Returns how many it failed, or a negative errno.
 */
int dw_bpf_dns_sweep(struct dw_bpf *b)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int err;

	/* nothing outstanding and no answer waiting for its query, nothing to sweep (the counts are
	 * the kernel's, read in place) */
	if (!dw_bpf_dns_on(b) || (!*(volatile __u32 *)&b->skel->bss->dw_dns_live &&
				  !*(volatile __u32 *)&b->skel->bss->dw_dns_early_n))
		return 0;
	err = bpf_prog_test_run_opts(bpf_program__fd(b->skel->progs.dw_dns_sweep), &opts);
	if (err)
		return -errno;
	return (int)b->skel->bss->dw_dns_swept;
}

/* iter/tcp adopts the connections open at start; it runs once, in dw_bpf_classify_existing. */
static void note_adopt(struct dw_bpf *b)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];

	ps->name = bpf_program__name(b->skel->progs.dw_classify);
	ps->hook = HOOK_ADOPT;
	ps->attached = !dw_bpf_withheld(b, HOOK_ADOPT);
	if (!ps->attached)
		dw_hook_off_why(ps->why, sizeof(ps->why), HOOK_ADOPT, NULL);
}

/*
 * The abort iterator's link, made once here, run by abort.c on demand. The
 * start line names the path: sock_destroy(kfunc) or sock_destroy(sock_diag).
 */
static void attach_abort(struct dw_bpf *b)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];
	bool diag = b->abort_path == DW_ABORT_PATH_SOCK_DIAG;
	struct bpf_program *prog = diag ? b->skel->progs.dw_abort_list : b->skel->progs.dw_abort;

	ps->name = bpf_program__name(prog);
	ps->hook = b->abort_why[0] ? HOOK_ABORT : diag ? HOOK_ABORT "(sock_diag)" : HOOK_ABORT "(kfunc)";
	if (b->abort_why[0]) {
		dw_hook_off_why(ps->why, sizeof(ps->why), HOOK_ABORT, b->abort_why);
		return;
	}
	ps->link = bpf_program__attach_iter(prog, NULL);
	if (!ps->link) {
		b->abort_path = DW_ABORT_PATH_NONE;
		ps->hook = HOOK_ABORT;
		snprintf(b->abort_why, sizeof(b->abort_why), "attach failed: %s", strerror(errno));
		dw_hook_off_why(ps->why, sizeof(ps->why), HOOK_ABORT, b->abort_why);
		return;
	}
	ps->attached = true;
	b->abort_link = ps->link;
}

/*
 * The TLS hook on the start line: the exec watch is attached here; the
 * uprobes are the discovery's (user/discovery/tls/), per file, after the start.
 */
static void note_tls(struct dw_bpf *b)
{
	struct dw_prog_status *ps = &b->progs[b->nprogs++];

	ps->name = "dw_ssl_*";
	ps->hook = b->tls_on ? HOOK_TLS "(uprobes)" : HOOK_TLS;
	if (!b->tls_on) {
		snprintf(ps->why, sizeof(ps->why), "%s", b->tls_why);
		return;
	}
	ps->link = bpf_program__attach(b->skel->progs.dw_tls_exec);
	if (!ps->link)
		/* the start's scan still attaches: only the processes started later escape */
		snprintf(ps->why, sizeof(ps->why), "the exec watch (sched_process_exec) failed to attach: %s; "
			 "processes started from now on are not traced", strerror(errno));
	ps->attached = ps->link != NULL;
}

struct bpf_object *dw_bpf_object(const struct dw_bpf *b)
{
	return b->skel->obj;
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
		err = dw_bpf_map_pending(b, 1);
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
		attach_dns(b, opts->cgroup);
		note_adopt(b);
		attach_abort(b);
		note_tls(b);
	}
	if (err)
		dw_bpf_stop(b);
	return err;
}

void dw_bpf_stop(struct dw_bpf *b)
{
	dw_bpf_unmap_all(b);
	b->abort_link = NULL;
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

	if (dw_bpf_withheld(b, HOOK_ADOPT))
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
	case DW_MAP_DNS_PORTS:
		return bpf_map__fd(b->skel->maps.dns_ports);
	}
	return -EINVAL;
}

void dw_bpf_set_services_on(struct dw_bpf *b, bool on)
{
	b->skel->bss->dw_services_on = on;
}
