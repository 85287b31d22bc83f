// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Loading, probing, pinning and attaching the BPF side. */
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
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "loader.h"
#include "log.h"

/* Maps other tools may read, pinned by these names under the pin dir. */
static const char *const pinned_maps[] = { "dests", "details", "globals", "conns", "breakers" };

struct prog_spec {
	const char *name;
	const char *tracepoint;	/* its btf_trace_<tp> typedef must be in the kernel's BTF */
	bool required;
	const char *without;	/* what is lost without it */
};

static const struct prog_spec prog_specs[] = {
	{ "dw_send", "sock_send_length", true, NULL },
	{ "dw_recv", "sock_recv_length", true, NULL },
	{ "dw_set_state", "inet_sock_set_state", true, NULL },
	{ "dw_data_ready", "sk_data_ready", false, "calls complete at the receive, not at data arrival" },
	{ "dw_retransmit", "tcp_retransmit_skb", false, "retransmits are not counted" },
};

/* The cgroup v2 mount: /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid hosts. */
static int cgroup2_root(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char dev[256], dir[256], type[64];
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (found && fscanf(f, "%255s %255s %63s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", dir);
			found = 0;
		}
	fclose(f);
	return found;
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

/* Decides which tracing programs to load; fails when a required one cannot be. */
static int probe_programs(struct dw_bpf *b)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int err = 0;

	if (!vmlinux) {
		dw_err("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(prog_specs) / sizeof(prog_specs[0]); i++) {
		const struct prog_spec *spec = &prog_specs[i];
		struct dw_prog_status *ps = &b->progs[b->nprogs++];
		struct bpf_program *prog;

		ps->name = spec->name;
		ps->hook = spec->tracepoint;
		ps->required = spec->required;
		if (kernel_has_tracepoint(vmlinux, spec->tracepoint))
			continue;
		prog = bpf_object__find_program_by_name(b->skel->obj, spec->name);
		bpf_program__set_autoload(prog, false);
		snprintf(ps->why, sizeof(ps->why), "tracepoint not in this kernel%s%s",
			 spec->without ? ": " : "", spec->without ? spec->without : "");
		if (spec->required) {
			dw_err("this kernel lacks the tracepoint %s, which depwatch needs (Linux 6.3+)",
			       spec->tracepoint);
			err = -ENOTSUP;
		}
	}
	btf__free(vmlinux);
	return err;
}

static int open_and_load(struct dw_bpf *b)
{
	int err;

	b->skel = depwatch_bpf__open();
	if (!b->skel) {
		dw_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	bpf_map__set_max_entries(b->skel->maps.dests, b->max_dests);
	bpf_map__set_max_entries(b->skel->maps.details, b->max_dests);
	err = probe_programs(b);
	if (err)
		return err;
	err = depwatch_bpf__load(b->skel);
	if (err) {
		dw_err("cannot load the BPF programs: %s", strerror(-err));
		return err;
	}
	b->dests_fd = bpf_map__fd(b->skel->maps.dests);
	b->details_fd = bpf_map__fd(b->skel->maps.details);
	b->dep_cfg_fd = bpf_map__fd(b->skel->maps.dep_cfg);
	b->dep_match_fd = bpf_map__fd(b->skel->maps.dep_match);
	b->breakers_fd = bpf_map__fd(b->skel->maps.breakers);
	b->globals_fd = bpf_map__fd(b->skel->maps.globals);
	b->conns_fd = bpf_map__fd(b->skel->maps.conns);
	return 0;
}

/* The overflow row exists before anything can need it. */
static int create_overflow_rows(struct dw_bpf *b)
{
	struct dw_dest_key key = { .family = DW_FAMILY_OVERFLOW };
	struct dw_dest_detail *detail = calloc(1, sizeof(*detail));
	void *stats = calloc(b->ncpus, sizeof(struct dw_dest_stats));
	int err = -ENOMEM;

	if (!detail || !stats)
		goto out;
	err = bpf_map_update_elem(b->dests_fd, &key, stats, BPF_NOEXIST);
	if (!err)
		err = bpf_map_update_elem(b->details_fd, &key, detail, BPF_NOEXIST);
	if (err)
		dw_err("cannot create the overflow row: %s", strerror(errno));
out:
	free(detail);
	free(stats);
	return err;
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
	}
	return 0;
}

static void unpin_maps(struct dw_bpf *b)
{
	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		unlinkat(b->pin_dir_fd, pinned_maps[i], 0);
}

static void attach_tracing(struct dw_bpf *b)
{
	for (int i = 0; i < b->nprogs; i++) {
		struct dw_prog_status *ps = &b->progs[i];
		struct bpf_program *prog = bpf_object__find_program_by_name(b->skel->obj, ps->name);
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		link = bpf_program__attach(prog);
		if (!link) {
			snprintf(ps->why, sizeof(ps->why), "attach failed: %s", strerror(errno));
			continue;
		}
		ps->attached = true;
		ps->link = link;
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
		err = cgroup2_root(path, sizeof(path));
	fd = err ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 2; i++) {
		struct dw_prog_status *ps = &b->progs[b->nprogs++];

		ps->name = bpf_program__name(progs[i]);
		ps->hook = hooks[i];
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

static int required_attached(const struct dw_bpf *b)
{
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].required && !b->progs[i].attached) {
			dw_err("cannot attach %s (%s): %s", b->progs[i].name, b->progs[i].hook,
			       b->progs[i].why);
			return -ENOTSUP;
		}
	return 0;
}

static int attach_pending_iter(struct dw_bpf *b)
{
	union bpf_iter_link_info linfo = { .map.map_fd = b->conns_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo, .link_info_len = sizeof(linfo));

	b->pending_iter = bpf_program__attach_iter(b->skel->progs.dw_dump_pending, &opts);
	if (!b->pending_iter) {
		dw_err("cannot attach the socket-state iterator: %s", strerror(errno));
		return -errno;
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
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0) {
		dw_err("cannot count the CPUs: %s", strerror(-b->ncpus));
		return -EINVAL;
	}
	err = pin_dir_open(b, opts->pin_dir);
	if (err)
		return err;
	pin_dir_clear(b);
	err = open_and_load(b);
	if (!err)
		err = create_overflow_rows(b);
	if (!err)
		err = pin_maps(b);
	if (!err && opts->before_attach)
		err = opts->before_attach(b, opts->arg);
	if (!err) {
		attach_tracing(b);
		err = required_attached(b);
	}
	if (!err)
		attach_enforce(b, opts->cgroup);
	if (!err)
		err = attach_pending_iter(b);
	if (err)
		dw_bpf_stop(b);
	return err;
}

void dw_bpf_stop(struct dw_bpf *b)
{
	bpf_link__destroy(b->pending_iter);
	b->pending_iter = NULL;
	for (int i = 0; i < b->nprogs; i++) {
		bpf_link__destroy(b->progs[i].link);
		b->progs[i].link = NULL;
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
	int missing = 0;

	append(buf, len, &off, "attached:%s%s", "", "");
	for (int i = 0; i < b->nprogs; i++)
		if (b->progs[i].attached)
			append(buf, len, &off, " %s%s", b->progs[i].hook, "");
	append(buf, len, &off, "; not attached:%s%s", "", "");
	for (int i = 0; i < b->nprogs; i++) {
		if (b->progs[i].attached)
			continue;
		missing++;
		append(buf, len, &off, " %s (%s)", b->progs[i].hook, b->progs[i].why);
	}
	if (!missing)
		append(buf, len, &off, " none%s%s", "", "");
}

static int run_iter(struct bpf_link *link, void *buf, size_t len, dw_pending_fn fn, void *arg)
{
	int fd = bpf_iter_create(bpf_link__fd(link));
	ssize_t n;
	size_t have = 0;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, (char *)buf + have, len - have)) > 0) {
		have += n;
		if (!fn)
			have = 0;
		while (fn && have >= sizeof(struct dw_pending)) {
			fn(buf, arg);
			have -= sizeof(struct dw_pending);
			memmove(buf, (char *)buf + sizeof(struct dw_pending), have);
		}
	}
	close(fd);
	return n < 0 ? -errno : 0;
}

int dw_bpf_classify_existing(struct dw_bpf *b)
{
	struct bpf_link *link = bpf_program__attach_iter(b->skel->progs.dw_classify, NULL);
	char buf[256];
	int err;

	if (!link)
		return -errno;
	b->skel->bss->classify_pass = 1;
	err = run_iter(link, buf, sizeof(buf), NULL, NULL);
	b->skel->bss->classify_pass = 2;
	if (!err)
		err = run_iter(link, buf, sizeof(buf), NULL, NULL);
	bpf_link__destroy(link);
	return err;
}

int dw_bpf_remap(struct dw_bpf *b)
{
	union bpf_iter_link_info linfo = { .map.map_fd = b->conns_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &linfo, .link_info_len = sizeof(linfo));
	struct bpf_link *link = bpf_program__attach_iter(b->skel->progs.dw_remap, &opts);
	char buf[256];
	int err;

	if (!link)
		return -errno;
	err = run_iter(link, buf, sizeof(buf), NULL, NULL);
	bpf_link__destroy(link);
	return err;
}

int dw_bpf_scan_pending(struct dw_bpf *b, dw_pending_fn fn, void *arg)
{
	struct dw_pending buf[128];

	return run_iter(b->pending_iter, buf, sizeof(buf), fn, arg);
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
		out->dest_map_full += per_cpu[i].dest_map_full;
		out->hist_map_full += per_cpu[i].hist_map_full;
		out->conn_storage_fail += per_cpu[i].conn_storage_fail;
	}
	return 0;
}
