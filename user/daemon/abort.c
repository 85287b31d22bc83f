// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* When the abort iterator runs, and what it did. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "daemon/abort.h"
#include "enforce/abortrec.h"
#include "output/alert.h"
#include "collect/collect.h"
#include "daemon/deps.h"
#include "kernel/maprows.h"
#include "host/log.h"
#include "logic/kernel/kplan.h"
#include "kernel/sockdiag.h"

#define NO_LOOKUP UINT64_MAX

static uint64_t shortest_after(const struct dw_deps *deps)
{
	uint64_t min = deps->cfg.defaults.abort_after_ns;

	for (unsigned i = 0; i < deps->cfg.ndeps; i++) {
		uint64_t a = deps->cfg.deps[i].s.abort_after_ns;

		if (a && (!min || a < min))
			min = a;
	}
	return min;
}

static bool wants_abort(const struct dw_deps *deps)
{
	if (deps->cfg.defaults.enforce_abort || deps->cfg.defaults.abort_after_ns)
		return true;
	for (unsigned i = 0; i < deps->cfg.ndeps; i++)
		if (deps->cfg.deps[i].s.enforce_abort || deps->cfg.deps[i].s.abort_after_ns)
			return true;
	return false;
}

/* One warning per start or reload that asks for what this kernel cannot do. */
static void warn_fallback(const struct dw_abort *a, const struct dw_deps *deps,
			  const struct dw_bpf *b)
{
	if (a->on || !wants_abort(deps))
		return;
	dw_warn("cannot abort connections (sock_destroy: %s): enforce = abort falls back to connect, abort_after aborts nothing",
		b->abort_why[0] ? b->abort_why : "not attached");
}

void dw_abort_init(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b,
		   uint64_t interval_ns)
{
	struct stat st;

	memset(a, 0, sizeof(*a));
	a->on = b->abort_link != NULL;
	a->diag = a->on && b->abort_path == DW_ABORT_PATH_SOCK_DIAG;
	a->interval_ns = interval_ns;
	a->own_ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (a->own_ns_fd >= 0 && !fstat(a->own_ns_fd, &st))
		a->own_netns = st.st_ino;
	deps->can_abort = a->on;
	dw_abort_reload(a, deps);
	warn_fallback(a, deps, b);
}

void dw_abort_reload(struct dw_abort *a, struct dw_deps *deps)
{
	for (unsigned i = 0; i < a->nslots; i++)
		a->slot_after[i] = NO_LOOKUP;
	a->min_after_ns = a->on ? shortest_after(deps) : 0;
	a->next_deadline_ns = 0;
	deps->can_abort = a->on;
}

bool dw_abort_wants_netns(const struct dw_abort *a, const struct dw_deps *deps)
{
	return a->on && wants_abort(deps);
}

bool dw_abort_wants_net_admin(const struct dw_abort *a)
{
	return a->diag;
}

void dw_abort_free(struct dw_abort *a)
{
	if (a->own_ns_fd > 0)
		close(a->own_ns_fd);
	free(a->ns);
	free(a->ns_pid);
	free(a->slot_after);
	free(a->per_dep);
	memset(a, 0, sizeof(*a));
}

/* The abort_after of the dependency dest belongs to, as the plan writes dep_cfg; 0: none. */
static uint64_t after_of(const struct dw_deps *deps, const struct dw_dest_key *dest)
{
	if (dw_row_kind_of(dest) != DW_ROW_OUTBOUND)
		return 0;	/* the overflow row, listener rows */
	return dw_kplan_dest_dep_cfg(&deps->cfg, dest).abort_after_ns;
}

static uint64_t slot_after(struct dw_abort *a, const struct dw_deps *deps, __u32 slot,
			   const struct dw_dest_key *dest)
{
	if (slot >= a->nslots) {
		unsigned n = slot + 256;
		uint64_t *p = realloc(a->slot_after, n * sizeof(*p));

		if (!p)
			return after_of(deps, dest);
		for (unsigned i = a->nslots; i < n; i++)
			p[i] = NO_LOOKUP;
		a->slot_after = p;
		a->nslots = n;
	}
	if (a->slot_after[slot] == NO_LOOKUP)
		a->slot_after[slot] = after_of(deps, dest);
	return a->slot_after[slot];
}

/* netns into the namespaces this pass visits, once each. */
static void ns_add(struct dw_abort *a, __u32 netns)
{
	for (unsigned i = 0; i < a->nns; i++)
		if (a->ns[i] == netns)
			return;
	if (a->nns == a->ns_cap) {
		unsigned cap = a->ns_cap ? 2 * a->ns_cap : 8;
		__u32 *p = realloc(a->ns, cap * sizeof(*p));

		if (!p)
			return;
		a->ns = p;
		a->ns_cap = cap;
	}
	a->ns[a->nns++] = netns;
}

struct scan {
	struct dw_abort *a;
	const struct dw_deps *deps;
	uint64_t now, next;
	bool due;
};

static void scan_entry(const struct dw_pending_entry *e, const struct dw_dest_key *dest, void *arg)
{
	struct scan *s = arg;
	uint64_t after, deadline;

	if (!e->call_start_ns || (e->flags & DW_PEND_MULTIPLEXED))
		return;
	after = slot_after(s->a, s->deps, e->slot, dest);
	if (!after)
		return;
	deadline = e->call_start_ns + after;
	/* one already past at the last scan was handed to the kernel then: not again */
	if (deadline <= s->a->last_scan_ns)
		return;
	/* no slack: a pass before the deadline would find the call young and never see it again */
	if (deadline <= s->now) {
		s->due = true;
		ns_add(s->a, dest->netns);
	} else if (!s->next || deadline < s->next) {
		s->next = deadline;
	}
}

/* Whether a call reached its abort_after since the last scan; notes the next deadline. */
static bool deadline_due(struct dw_abort *a, const struct dw_deps *deps, struct dw_bpf *b,
			 uint64_t now)
{
	struct scan s = { .a = a, .deps = deps, .now = now };

	if (!a->min_after_ns)
		return false;
	if (dw_bpf_scan_pending(b, scan_entry, &s))
		return false;
	a->last_scan_ns = now;
	a->next_deadline_ns = s.next;
	return s.due;
}

static int grow_per_dep(struct dw_abort *a, unsigned n);

/*
 * Whether a pass is due for an open enforce = abort breaker: the first of
 * its open period, then at a poll only while connections to it are open
 * (slipped through: a connect under way at the opening, one that could not
 * be aborted); a pass walks every socket of a namespace, not something to
 * repeat for nothing. The namespaces of its destinations go to the pass.
 */
static bool breaker_open(struct dw_abort *a, const struct dw_deps *deps)
{
	bool open = false;

	if (grow_per_dep(a, deps->n))
		return false;
	for (unsigned i = 0; i < deps->n; i++) {
		const struct dw_dep *dep = &deps->deps[i];
		bool first;

		if (!dep->used || !dep->s->enforce_abort || dep->br.state != DW_BREAKER_OPEN)
			continue;
		first = a->per_dep[i].passed_since_ns != dep->br.since_ns;
		if (!first && !dep->fig.conns)
			continue;
		a->per_dep[i].passed_since_ns = dep->br.since_ns;
		open = true;
		for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
			if (first || dw_dest_conns_open(d))
				ns_add(a, d->key.netns);
	}
	return open;
}

/*
 * The same for a destination ejected from an enforce = abort dependency:
 * the first pass of its ejection, then while connections to it are open.
 */
static bool dest_ejected(struct dw_abort *a, const struct dw_deps *deps)
{
	bool out = false;

	for (unsigned i = 0; i < deps->n; i++) {
		const struct dw_dep *dep = &deps->deps[i];

		if (!dep->used || !dep->s->enforce_abort || !dep->ejected_dests)
			continue;
		for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
			if (d->ej.dep_id != dep->id || d->ej.e.state != DW_EJECT_OUT)
				continue;
			if (d->ej.e.since_ns < a->eject_pass_ns && !dw_dest_conns_open(d))
				continue;
			out = true;
			ns_add(a, d->key.netns);
		}
	}
	return out;
}

/* /proc/PID/ns/net if it is netns, else -1. */
static int ns_open_pid(int pid, __u32 netns)
{
	char path[64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_ino != netns) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A file of the network namespace netns (an inode number, as the kernel's
 * rows carry it): through the process it was last found in, else the first
 * process under /proc that is in it. -ENOENT when no process is.
 */
static int ns_open(struct dw_abort *a, __u32 netns)
{
	unsigned i;
	struct dirent *e;
	DIR *proc;
	int fd = -1;

	for (i = 0; i < a->nns_pid && a->ns_pid[i].netns != netns; i++)
		;
	if (i < a->nns_pid && (fd = ns_open_pid(a->ns_pid[i].pid, netns)) >= 0)
		return fd;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (fd < 0 && (e = readdir(proc))) {
		int pid = atoi(e->d_name);

		if (pid > 0)
			fd = ns_open_pid(pid, netns);
		if (fd < 0)
			continue;
		if (i == a->nns_pid) {
			void *p = realloc(a->ns_pid, (i + 1) * sizeof(*a->ns_pid));

			if (!p)
				break;
			a->ns_pid = p;
			a->nns_pid++;
		}
		a->ns_pid[i].netns = netns;
		a->ns_pid[i].pid = pid;
	}
	closedir(proc);
	return fd >= 0 ? fd : -ENOENT;
}

/*
 * The iterator, and on the sock_diag path (a->diag) the netlink socket in
 * *diag_fd, created in network namespace netns: the TCP iterator walks, and
 * sock_diag acts in, the namespace of the process that creates them.
 */
static int open_in_ns(struct dw_abort *a, struct dw_bpf *b, int *diag_fd)
{
	int fd = bpf_iter_create(bpf_link__fd(b->abort_link));

	if (fd < 0 || !a->diag)
		return fd < 0 ? -errno : fd;
	*diag_fd = dw_sockdiag_open();
	if (*diag_fd >= 0)
		return fd;
	close(fd);
	return *diag_fd;
}

/* open_in_ns in network namespace netns: setns() for another one (CAP_SYS_ADMIN), and straight back. */
static int iter_in(struct dw_abort *a, struct dw_bpf *b, __u32 netns, int *diag_fd)
{
	int ns_fd, fd, err = 0;

	*diag_fd = -1;
	if (netns == a->own_netns || a->own_ns_fd < 0)
		return open_in_ns(a, b, diag_fd);
	ns_fd = ns_open(a, netns);
	if (ns_fd < 0)
		return ns_fd;
	if (setns(ns_fd, CLONE_NEWNET)) {
		err = -errno;
		close(ns_fd);
		return err;
	}
	close(ns_fd);
	fd = open_in_ns(a, b, diag_fd);
	if (fd < 0)
		err = fd;
	/* never go on in another namespace: exiting is fail-open, staying there is not */
	if (setns(a->own_ns_fd, CLONE_NEWNET)) {
		dw_err("cannot return to the daemon's own network namespace: %s", strerror(errno));
		exit(1);
	}
	return fd < 0 ? err : fd;
}

static int dep_index_of(const struct dw_deps *deps, const struct dw_abort_record *r)
{
	if (r->dep_id)
		return r->dep_id < DW_MAX_DEPS ? deps->index_of_id[r->dep_id] : -1;
	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used && !deps->deps[i].id &&
		    !memcmp(&deps->deps[i].dest, &r->dest, sizeof(r->dest)))
			return i;
	return -1;
}

/* What one pass did to one dependency. */
struct tally {
	uint64_t conns[4], calls[4], failed[4];	/* by enum dw_abort_reason */
};

/* An ejection's aborts, noted in its destination: its ejection line says them (deps.c). */
static void note_ejected(struct dw_deps *deps, int i, const struct dw_abort_record *r)
{
	for (struct dw_dest *d = deps->deps[i].dests; d; d = d->next_in_dep)
		if (!memcmp(&d->key, &r->dest, sizeof(r->dest)))
			d->ej.pass_aborted += !r->failed;
}

static void announce(struct dw_abort *a, struct dw_deps *deps, unsigned i, const struct tally *t,
		     uint64_t now)
{
	struct dw_dep *dep = &deps->deps[i];
	struct dw_abort_dep *pd = &a->per_dep[i];
	struct dw_abort_alert al = { .dependency = dep->name,
				     .state = dw_breaker_state_name(dep->br.state) };

	/* one line per open period: its first pass, which aborts the pool at once */
	if ((t->conns[DW_ABORT_BREAKER] || t->failed[DW_ABORT_BREAKER]) &&
	    pd->logged_since_ns != dep->br.since_ns) {
		pd->logged_since_ns = dep->br.since_ns;
		al.severity = LOG_WARNING;
		al.reason = "breaker";
		al.connections = t->conns[DW_ABORT_BREAKER];
		al.calls = t->calls[DW_ABORT_BREAKER];
		al.failed = t->failed[DW_ABORT_BREAKER];
		dw_alert_abort(&al);
	}
	if ((t->conns[DW_ABORT_TIMEOUT] || t->failed[DW_ABORT_TIMEOUT]) &&
	    dw_ratelimit_take(&pd->after_lines, now, false, &al.suppressed)) {
		al.severity = LOG_NOTICE;
		al.reason = "abort_after";
		al.abort_after_ns = dep->s->abort_after_ns;
		al.connections = t->conns[DW_ABORT_TIMEOUT];
		al.calls = t->calls[DW_ABORT_TIMEOUT];
		al.failed = t->failed[DW_ABORT_TIMEOUT];
		dw_alert_abort(&al);
	}
}

static int grow_per_dep(struct dw_abort *a, unsigned n)
{
	struct dw_abort_dep *p;

	if (n <= a->ndeps)
		return 0;
	p = realloc(a->per_dep, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + a->ndeps, 0, (n - a->ndeps) * sizeof(*p));
	for (unsigned i = a->ndeps; i < n; i++)
		dw_ratelimit_init(&p[i].after_lines);
	a->per_dep = p;
	a->ndeps = n;
	return 0;
}

/*
 * On the sock_diag path: destroys what dw_abort_list chose, and notes the
 * outcome in the record as dw_abort would have. A socket sock_diag no
 * longer finds closed since the iterator saw it: neither aborted nor failed.
 */
static bool destroy_listed(struct dw_abort *a, int diag_fd, struct dw_abort_record *r)
{
	int err;

	if (!a->diag)
		return true;
	err = dw_sockdiag_destroy(diag_fd, &r->sock);
	if (err == -ENOENT)
		return false;
	r->err = err;
	r->failed = err != 0;
	if (err && !a->diag_warned)
		dw_warn("sock_diag could not destroy a connection: %s (logged once; each is counted as failed)",
			strerror(-err));
	a->diag_warned |= err != 0;
	return true;
}

/* Reads one run of the iterator; tallies its records per dependency. */
static int read_records(struct dw_abort *a, struct dw_deps *deps, int fd, int diag_fd,
			struct tally *t)
{
	struct dw_abort_record rec[64];
	size_t have = 0;
	ssize_t n;

	/* records are written whole, but a read may end inside one: keep the rest */
	while ((n = read(fd, (char *)rec + have, sizeof(rec) - have)) > 0) {
		size_t whole = (have + n) / sizeof(rec[0]);

		for (size_t k = 0; k < whole; k++) {
			int i = dep_index_of(deps, &rec[k]);
			unsigned r = rec[k].reason == DW_ABORT_TIMEOUT || rec[k].reason == DW_ABORT_EJECT ?
				     rec[k].reason : DW_ABORT_BREAKER;

			if (!destroy_listed(a, diag_fd, &rec[k]))
				continue;
			a->aborted += !rec[k].failed;
			a->failed += rec[k].failed;
			if (i < 0 || (unsigned)i >= deps->n)
				continue;
			t[i].conns[r] += !rec[k].failed;
			t[i].calls[r] += !rec[k].failed && rec[k].had_call;
			t[i].failed[r] += rec[k].failed;
			if (r == DW_ABORT_EJECT)
				note_ejected(deps, i, &rec[k]);
		}
		have = (have + n) % sizeof(rec[0]);
		memmove(rec, (char *)rec + whole * sizeof(rec[0]), have);
	}
	return n < 0 ? -errno : 0;
}

/* Runs the iterator in each namespace of a->ns (the daemon's own if none); logs what it did. */
static int run_pass(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t now)
{
	struct tally *t;
	int fd, diag_fd, err = 0;

	if (grow_per_dep(a, deps->n))
		return -ENOMEM;
	t = calloc(deps->n ? deps->n : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (!a->nns)
		ns_add(a, a->own_netns);
	a->passes++;
	for (unsigned i = 0; i < a->nns; i++) {
		fd = iter_in(a, b, a->ns[i], &diag_fd);
		if (fd < 0) {
			/* a namespace whose last process is gone has no connections left either */
			if (fd != -ENOENT && !a->ns_warned)
				dw_warn("cannot abort connections in network namespace %u: %s (logged once)",
					a->ns[i], strerror(-fd));
			a->ns_warned |= fd != -ENOENT;
			continue;
		}
		if (!err)
			err = read_records(a, deps, fd, diag_fd, t);
		close(fd);
		if (diag_fd >= 0)
			close(diag_fd);
	}
	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used)
			announce(a, deps, i, &t[i], now);
	free(t);
	return err;
}

void dw_abort_check(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t now)
{
	bool due, open, out;
	int err;

	a->nns = 0;
	due = deadline_due(a, deps, b, now);
	open = breaker_open(a, deps);
	out = dest_ejected(a, deps);
	if (!a->on || (!due && !open && !out))
		return;
	if (out)
		a->eject_pass_ns = now;
	err = run_pass(a, deps, b, now);
	if (err)
		dw_err("running the abort iterator failed: %s", strerror(-err));
}

uint64_t dw_abort_next(const struct dw_abort *a)
{
	uint64_t next = a->next_deadline_ns, rescan;

	if (!a->min_after_ns)
		return 0;
	/*
	 * A call that starts after this scan is seen by the next one: scanning
	 * every half abort_after (when that is shorter than the poll) finds it
	 * before its deadline.
	 */
	if (a->min_after_ns / 2 < a->interval_ns) {
		rescan = a->last_scan_ns + a->min_after_ns / 2;
		if (!next || rescan < next)
			next = rescan;
	}
	return next;
}
