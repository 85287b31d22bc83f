// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* When the abort iterator runs, and what it did. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "abort.h"
#include "alert.h"
#include "collect.h"
#include "deps.h"
#include "loader.h"
#include "log.h"

/* abort_after lines: the same rate limit as the breaker alerts (deps.c) */
#define ABORT_BURST 5.0
#define ABORT_REFILL_NS 12000000000ULL
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
static void warn_fallback(const struct dw_abort *a, const struct dw_deps *deps, const struct dw_bpf *b)
{
	if (a->on || !wants_abort(deps))
		return;
	dw_warn("cannot abort connections (sock_destroy: %s): enforce = abort falls back to connect, abort_after aborts nothing",
		b->abort_why[0] ? b->abort_why : "not attached");
}

void dw_abort_init(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t interval_ns)
{
	memset(a, 0, sizeof(*a));
	a->on = b->abort_link != NULL;
	a->interval_ns = interval_ns;
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

void dw_abort_free(struct dw_abort *a)
{
	free(a->slot_after);
	free(a->per_dep);
	memset(a, 0, sizeof(*a));
}

/* The abort_after of the dependency dest belongs to (as the kernel's dep_cfg has it); 0: none. */
static uint64_t after_of(const struct dw_deps *deps, const struct dw_dest_key *dest)
{
	int i;

	if (dest->family != AF_INET && dest->family != AF_INET6)
		return 0;	/* the overflow row, inbound rows */
	i = dw_config_lookup(&deps->cfg, dest->family, dest->addr, dest->port);
	return i >= 0 ? deps->cfg.deps[i].s.abort_after_ns : deps->cfg.defaults.abort_after_ns;
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
	if (deadline <= s->now + 1000000ULL)
		s->due = true;
	else if (!s->next || deadline < s->next)
		s->next = deadline;
}

/* Whether a call reached its abort_after since the last scan; notes the next deadline. */
static bool deadline_due(struct dw_abort *a, const struct dw_deps *deps, struct dw_bpf *b, uint64_t now)
{
	struct scan s = { .a = a, .deps = deps, .now = now };

	if (!a->min_after_ns)
		return false;
	if (dw_bpf_scan_pending(b, scan_entry, &s))
		return false;
	a->last_scan_ns = now + 1000000ULL;
	a->next_deadline_ns = s.next;
	return s.due;
}

static bool breaker_open(const struct dw_deps *deps)
{
	for (unsigned i = 0; i < deps->n; i++) {
		const struct dw_dep *dep = &deps->deps[i];

		if (dep->used && dep->s->enforce_abort && dep->br.state == DW_BREAKER_OPEN)
			return true;
	}
	return false;
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
	uint64_t conns[3], calls[3], failed[3];	/* by enum dw_abort_reason */
};

static bool timeout_line_allowed(struct dw_abort_dep *pd, uint64_t now)
{
	if (!pd->tokens_ns)
		pd->tokens = ABORT_BURST;
	else
		pd->tokens += (double)(now - pd->tokens_ns) / ABORT_REFILL_NS;
	if (pd->tokens > ABORT_BURST)
		pd->tokens = ABORT_BURST;
	pd->tokens_ns = now;
	if (pd->tokens < 1) {
		pd->suppressed++;
		return false;
	}
	pd->tokens -= 1;
	return true;
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
	    timeout_line_allowed(pd, now)) {
		al.severity = LOG_NOTICE;
		al.reason = "abort_after";
		al.abort_after_ns = dep->s->abort_after_ns;
		al.connections = t->conns[DW_ABORT_TIMEOUT];
		al.calls = t->calls[DW_ABORT_TIMEOUT];
		al.failed = t->failed[DW_ABORT_TIMEOUT];
		al.suppressed = pd->suppressed;
		pd->suppressed = 0;
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
	a->per_dep = p;
	a->ndeps = n;
	return 0;
}

/* Runs the iterator once in this network namespace; tallies its records per dependency. */
static int run_pass(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t now)
{
	struct dw_abort_record rec[64];
	struct tally *t;
	size_t have = 0;
	ssize_t n;
	int fd;

	if (grow_per_dep(a, deps->n))
		return -ENOMEM;
	t = calloc(deps->n ? deps->n : 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	fd = bpf_iter_create(bpf_link__fd(b->abort_link));
	if (fd < 0) {
		free(t);
		return -errno;
	}
	a->passes++;
	/* records are written whole, but a read may end inside one: keep the rest */
	while ((n = read(fd, (char *)rec + have, sizeof(rec) - have)) > 0) {
		size_t whole = (have + n) / sizeof(rec[0]);

		for (size_t k = 0; k < whole; k++) {
			int i = dep_index_of(deps, &rec[k]);
			unsigned r = rec[k].reason == DW_ABORT_TIMEOUT ? DW_ABORT_TIMEOUT : DW_ABORT_BREAKER;

			a->aborted += !rec[k].failed;
			a->failed += rec[k].failed;
			if (i < 0 || (unsigned)i >= deps->n)
				continue;
			t[i].conns[r] += !rec[k].failed;
			t[i].calls[r] += !rec[k].failed && rec[k].had_call;
			t[i].failed[r] += rec[k].failed;
		}
		have = (have + n) % sizeof(rec[0]);
		memmove(rec, (char *)rec + whole * sizeof(rec[0]), have);
	}
	close(fd);
	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used)
			announce(a, deps, i, &t[i], now);
	free(t);
	return n < 0 ? -errno : 0;
}

void dw_abort_check(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t now)
{
	bool due = deadline_due(a, deps, b, now);
	int err;

	if (!a->on || (!due && !breaker_open(deps)))
		return;
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
