// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "host/cgroups.h"
#include "collect/collect.h"
#include "kernel/maprows.h"
#include "host/log.h"
#include "logic/kernel/cpurows.h"

static struct dw_dest *slot_for(struct dw_dest *tab, size_t cap, const struct dw_dest_key *key)
{
	size_t i = dw_dest_key_hash(key) & (cap - 1);

	while (tab[i].used && memcmp(&tab[i].key, key, sizeof(*key)))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int grow(struct dw_collector *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64;
	struct dw_dest *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->dests[i].used)
			*slot_for(tab, cap, &c->dests[i].key) = c->dests[i];
	free(c->dests);
	c->dests = tab;
	c->cap = cap;
	return 0;
}

static struct dw_dest *dest_get(struct dw_collector *c, const struct dw_dest_key *key)
{
	struct dw_dest *d;

	if ((c->count + 1) * 4 > c->cap * 3 && grow(c))
		return NULL;
	d = slot_for(c->dests, c->cap, key);
	if (d->used)
		return d;
	memset(d, 0, sizeof(*d));
	if (dw_window_init(&d->call_win, c->nslots) || dw_window_init(&d->connect_win, c->nslots)) {
		dw_window_free(&d->call_win);
		dw_window_free(&d->connect_win);
		return NULL;
	}
	dw_dest_set_key(d, key);
	d->used = true;
	d->dep = d->own_dep = -1;
	c->count++;
	return d;
}

const struct dw_dest *dw_collect_next(const struct dw_collector *c, const struct dw_dest *d,
				      enum dw_row_kind kind)
{
	const struct dw_dest *end = c->dests + c->cap;

	for (d = d ? d + 1 : c->dests; d < end; d++)
		if (d->used && d->kind == kind)
			return d;
	return NULL;
}

int dw_collect_init(struct dw_collector *c, unsigned nslots)
{
	memset(c, 0, sizeof(*c));
	c->nslots = nslots;
	return grow(c);
}

void dw_collect_free(struct dw_collector *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->dests[i].used)
			continue;
		dw_window_free(&c->dests[i].call_win);
		dw_window_free(&c->dests[i].connect_win);
		free(c->dests[i].pending_start);
		free(c->dests[i].late);
	}
	free(c->dests);
	free(c->waits);
	for (unsigned r = 0; r < c->ncallers; r++)
		dw_window_free(&c->callers[r].win);
	free(c->callers);
	free(c->rows);
	free(c->seq_before);
	free(c->seq_after);
	free(c->crows);
	memset(c, 0, sizeof(*c));
}

/* Every field of struct dw_dest_stats before last_conn_ns is a __u64 counter: summed as an array. */
#define STATS_COUNTERS (offsetof(struct dw_dest_stats, last_conn_ns) / sizeof(__u64))

static void sum_cpus(const struct dw_dest_stats *per_cpu, int ncpus, struct dw_dest_stats *out)
{
	__u64 *sum = (__u64 *)out;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ncpus; i++) {
		const struct dw_dest_stats *s = &per_cpu[i];
		const __u64 *add = (const __u64 *)s;

		for (size_t k = 0; k < STATS_COUNTERS; k++)
			sum[k] += add[k];
		if (s->last_conn_ns > out->last_conn_ns) {
			out->last_conn_ns = s->last_conn_ns;
			out->last_pid = s->last_pid;
			memcpy(out->last_comm, s->last_comm, sizeof(out->last_comm));
		}
		if (s->last_fail_status)
			out->last_fail_status = s->last_fail_status;
	}
}

/*
 * Kernel buckets are u32 and wrap; the difference since the last read does
 * not. Most buckets did not move: blocks of them equal to the last read are
 * skipped with one compare each.
 */
/*
 * The kernel's u32 buckets wrap: each delta is taken modulo 2^32 against
 * what was last read, and goes to the window and to the cumulative
 * coarse buckets, u64s that do not wrap.
 */
static void add_deltas(struct dw_window *win, __u32 *seen, const __u32 *now, uint64_t *cum)
{
	for (unsigned blk = 0; blk < DW_HIST_BUCKETS; blk += DW_HIST_SUB) {
		if (!memcmp(&seen[blk], &now[blk], DW_HIST_SUB * sizeof(*now)))
			continue;
		for (unsigned i = blk; i < blk + DW_HIST_SUB; i++) {
			__u32 delta = now[i] - seen[i];

			if (!delta)
				continue;
			dw_window_add(win, i, delta);
			cum[dw_hist_coarse_of(i)] += delta;
			seen[i] = now[i];
		}
	}
}

/* Attempts at reading one slot's rows as of one moment before giving up until the next read. */
#define READ_TRIES 64

/* What read_rows copies of one slot: its per-CPU rows, and the shared parts wanted. */
struct rows_copy {
	struct dw_cpu_row *rows;
	const struct dw_cpu_row *live;
	size_t nrows;
	const struct dw_dest_detail *row;
	struct dw_dest_detail *detail;
	bool call, slices;
};

static void copy_rows(void *arg)
{
	struct rows_copy *rc = arg;

	memcpy(rc->rows, rc->live, rc->nrows * sizeof(*rc->live));
	if (rc->call)
		memcpy(rc->detail->call, rc->row->call, sizeof(rc->detail->call));
	if (rc->slices)
		memcpy(rc->detail->slices, rc->row->slices, sizeof(rc->detail->slices));
}

/*
 * The slot's per-CPU rows and the shared parts wanted, as of one moment
 * (struct dw_cpu_row's seqcount, dw_cpu_rows_read). False if folds kept
 * coming: nothing usable was read.
 */
static bool read_rows(struct dw_collector *c, struct dw_bpf *b, unsigned slot, bool call,
		      bool slices, struct dw_dest_detail *detail)
{
	struct rows_copy rc = { .rows = c->rows, .live = dw_bpf_cpu_rows(b, slot), .nrows = b->ncpus,
				.row = dw_bpf_detail(b, slot), .detail = detail, .call = call,
				.slices = slices };

	return dw_cpu_rows_read(&rc.live->seq, sizeof(*rc.live), b->ncpus, c->seq_before,
				c->seq_after, READ_TRIES, copy_rows, &rc);
}

/*
 * From the mapped rows, copied first (each bucket must be read once, and the
 * kernel keeps adding), and only the parts that can have changed: call
 * histogram at completions, connect histogram at connects, slices at any
 * start or end of a call. The call histogram and the slices are the shared
 * row plus the per-CPU rows (cpurows.h); a read that found them moving
 * (read_rows) keeps the figures it had and is done again at the next one.
 */
static void read_detail(struct dw_collector *c, struct dw_bpf *b, unsigned slot, struct dw_dest *d,
			const struct dw_dest_stats *now, struct dw_dest_detail *detail)
{
	const struct dw_dest_stats *was = &d->sum;
	bool call = d->rows_unread || was->calls_completed != now->calls_completed;
	bool slices = d->rows_unread || was->calls_started != now->calls_started ||
		      was->calls_completed != now->calls_completed ||
		      was->calls_failed != now->calls_failed;

	if (was->connects_ok != now->connects_ok) {
		memcpy(detail->connect, dw_bpf_detail(b, slot)->connect, sizeof(detail->connect));
		add_deltas(&d->connect_win, d->seen_connect, detail->connect, d->cum_connect);
	}
	if (!call && !slices)
		return;
	d->rows_unread = slot >= b->cpu_rows.rows || !read_rows(c, b, slot, call, slices, detail);
	if (d->rows_unread) {
		c->rows_unstable++;
		return;
	}
	if (call) {
		dw_hist_add_runs(detail->call, c->rows, b->ncpus);
		add_deltas(&d->call_win, d->seen_call, detail->call, d->cum_call);
	}
	if (slices)
		d->nslices = dw_slices_merge(detail->slices, c->rows, b->ncpus, d->slices);
}

/* A destination's figures from its per-CPU counters, and the detail parts that moved. */
static void refresh_dest(struct dw_collector *c, struct dw_bpf *b, struct dw_dest *d,
			 const struct dw_dest_stats *per_cpu, struct dw_dest_detail *detail)
{
	struct dw_dest_stats sum;

	sum_cpus(per_cpu, b->ncpus, &sum);
	read_detail(c, b, d->slot, d, &sum, detail);
	/* the burst-timed calls went to the same window slot as their histogram counts */
	if (sum.calls_burst != d->sum.calls_burst) {
		d->burst_gen = dw_collect_gen(c);
		d->burst_seen = true;
	}
	d->sum = sum;
	if (dw_dest_inflight(d) || dw_dest_connecting(d))
		c->busy = true;
}

static void update_dest(struct dw_collector *c, struct dw_bpf *b, unsigned slot,
			const struct dw_dest_stats *per_cpu, struct dw_dest_detail *detail)
{
	struct dw_dest_key key = dw_bpf_detail(b, slot)->dest;
	struct dw_dest *d;

	/* a slot not yet published, or a lost race's (see dest_claim); slot 0's key is all zero */
	if (!dw_dest_key_published(slot, &key))
		return;
	d = dest_get(c, &key);
	if (!d) {
		dw_err("out of memory for destination figures");
		return;
	}
	d->slot = slot;
	refresh_dest(c, b, d, per_cpu, detail);
}

/* Room for one slot's per-CPU rows and their seqs (read_rows). */
static int rows_room(struct dw_collector *c, struct dw_bpf *b)
{
	if (c->rows)
		return 0;
	c->rows = calloc(b->ncpus, sizeof(*c->rows));
	c->seq_before = calloc(b->ncpus, sizeof(*c->seq_before));
	c->seq_after = calloc(b->ncpus, sizeof(*c->seq_after));
	c->crows = calloc(b->ncpus, sizeof(*c->crows));
	return c->rows && c->seq_before && c->seq_after && c->crows ? 0 : -ENOMEM;
}

/* Slots read per system call (BPF_MAP_LOOKUP_BATCH): 80 KiB of per-CPU rows on 2 CPUs. */
#define BATCH_SLOTS 256

/* The per-CPU counters of every slot in use, a batch at a time; details only where they moved. */
static int read_dests(struct dw_collector *c, struct dw_bpf *b)
{
	struct dw_dest_stats *per_cpu = calloc((size_t)BATCH_SLOTS * b->ncpus, sizeof(*per_cpu));
	struct dw_dest_detail *detail = malloc(sizeof(*detail));
	/* zeroed: valgrind cannot see the kernel write them (BPF_MAP_LOOKUP_BATCH) */
	__u32 keys[BATCH_SLOTS] = { 0 }, last = 0;
	unsigned n = dw_bpf_slots_used(b);
	int err = 0;

	c->busy = false;
	if (!per_cpu || !detail) {
		err = -ENOMEM;
		goto out;
	}
	err = dw_bpf_map_details(b, n);
	if (!err)
		err = dw_bpf_map_cpu_rows(b, n);
	if (!err)
		err = rows_room(c, b);
	if (err)
		goto out;
	for (unsigned first = 0; first < n;) {
		/* a batch resumes after the last key of the one before */
		__u32 in = last, count = n - first < BATCH_SLOTS ? n - first : BATCH_SLOTS;

		/* ENOENT: the batch reached the map's end (count says how many came) */
		if (bpf_map_lookup_batch(b->stats_fd, first ? &in : NULL, &last, keys, per_cpu, &count,
					 NULL) &&
		    errno != ENOENT) {
			err = -errno;
			break;
		}
		if (!count)
			break;
		for (__u32 i = 0; i < count; i++)
			if (keys[i] < n)
				update_dest(c, b, keys[i], &per_cpu[(size_t)i * b->ncpus], detail);
		first += count;
	}
out:
	free(per_cpu);
	free(detail);
	return err;
}

static void pending_push(struct dw_dest *d, uint64_t start_ns)
{
	if (d->pending_calls == d->pending_cap) {
		unsigned cap = d->pending_cap ? d->pending_cap * 2 : 16;
		uint64_t *p = realloc(d->pending_start, cap * sizeof(*p));

		if (!p)
			return;
		d->pending_start = p;
		d->pending_cap = cap;
	}
	d->pending_start[d->pending_calls++] = start_ns;
}

/* ---- callers (issue 16) ---- */

static int callers_room(struct dw_collector *c, unsigned n)
{
	struct dw_caller_acc *p;
	unsigned cap;

	if (n <= c->callers_cap)
		return 0;
	cap = c->callers_cap ? c->callers_cap : 16;
	while (cap < n)
		cap *= 2;
	p = realloc(c->callers, (size_t)cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + c->callers_cap, 0, (size_t)(cap - c->callers_cap) * sizeof(*p));
	c->callers = p;
	c->callers_cap = cap;
	return 0;
}

/* What read_caller_rows copies of one caller row: its per-CPU rows and itself. */
struct caller_copy {
	struct dw_caller_cpu_row *rows;
	const struct dw_caller_cpu_row *live;
	size_t nrows;
	const struct dw_caller_stats *shared;
	struct dw_caller_stats *row;
};

static void copy_caller_rows(void *arg)
{
	struct caller_copy *cc = arg;

	memcpy(cc->rows, cc->live, cc->nrows * sizeof(*cc->live));
	memcpy(cc->row, cc->shared, sizeof(*cc->row));
}

/*
 * Caller row r and its per-CPU rows as of one moment (see read_rows): the
 * rows' failed, slow and unflushed runs added to row; false if folds kept
 * coming (the caller's figures stay as they were until the next read).
 */
static bool read_caller_rows(struct dw_collector *c, struct dw_bpf *b, unsigned r,
			     struct dw_caller_stats *row)
{
	struct caller_copy cc = { .rows = c->crows, .live = dw_bpf_caller_cpu_rows(b, r),
				  .nrows = b->ncpus, .shared = dw_bpf_caller(b, r), .row = row };

	if (!dw_cpu_rows_read(&cc.live->seq, sizeof(*cc.live), b->ncpus, c->seq_before,
			      c->seq_after, READ_TRIES, copy_caller_rows, &cc))
		return false;
	for (int k = 0; k < b->ncpus; k++) {
		row->calls_failed += c->crows[k].failed;
		row->calls_slow += c->crows[k].slow;
		dw_runs_add(row->call, DW_CALLER_BUCKETS, c->crows[k].run);
	}
	return true;
}

static void read_caller(struct dw_collector *c, struct dw_bpf *b, unsigned r)
{
	struct dw_caller_stats row;
	struct dw_caller_acc *a = &c->callers[r];
	uint64_t ended;

	/* one copy, with the CPUs' rows: the kernel keeps adding */
	if (!read_caller_rows(c, b, r, &row)) {
		c->rows_unstable++;
		return;
	}
	if (!row.taken || row.slot >= b->details.rows)
		return;
	if (!a->used) {
		if (dw_window_init(&a->win, c->nslots)) {
			dw_err("out of memory for caller figures");
			return;
		}
		a->used = true;
		a->fig.cgroup_id = row.cgroup_id;
		a->fig.slot = row.slot;
		a->fig.dep = -1;
		a->key = dw_bpf_detail(b, row.slot)->dest;
	}
	/* the destination's key was published after its slot: take it once it is there */
	if (!dw_dest_key_published(row.slot, &a->key))
		a->key = dw_bpf_detail(b, row.slot)->dest;
	dw_caller_take(&a->fig.calls, &a->win, a->seen, row.call);
	a->fig.failed = row.calls_failed;
	a->fig.slow = row.calls_slow;
	/* recent is per poll (the series' top-N weight): a refresh leaves it to the next poll */
	if (c->refreshing)
		return;
	ended = a->fig.calls + a->fig.failed;
	a->fig.recent = ended - a->prev_ended;
	a->prev_ended = ended;
}

/* A caller row's destination is re-read by the refresh under way. */
static bool caller_hot(const struct dw_collector *c, const struct dw_caller_acc *a)
{
	const struct dw_dest *d = slot_for(c->dests, c->cap, &a->key);

	return d->used && d->hot;
}

/*
 * What a poll reads of the callers: every row. A refresh reads the rows of
 * its hot destinations, and rows new since the poll: the calls it finds in
 * flight are counted to their callers, so that a breaker opening on them
 * names the callers that hold them (a caller whose first calls came after
 * the poll included).
 */
static bool caller_to_read(const struct dw_collector *c, unsigned r)
{
	return !c->refreshing || !c->callers[r].used || caller_hot(c, &c->callers[r]);
}

/* Caller rows read, their calls in flight cleared for the pending walk to count. */
static int read_callers(struct dw_collector *c, struct dw_bpf *b)
{
	unsigned n;
	uint64_t *ids;
	size_t nids = 0;
	int err = dw_bpf_map_callers(b, &n);

	if (err || n <= 1)
		return err;
	if (callers_room(c, n) || rows_room(c, b))
		return -ENOMEM;
	if (n > c->ncallers)
		c->ncallers = n;
	ids = malloc((size_t)n * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (unsigned r = 1; r < n; r++) {
		struct dw_caller_acc *a = &c->callers[r];

		if (!caller_to_read(c, r))
			continue;
		read_caller(c, b, r);
		a->fig.inflight = 0;
		a->fig.oldest_ns = 0;
		if (a->used && a->fig.cgroup_id)
			ids[nids++] = a->fig.cgroup_id;
	}
	/* their cgroups named: at most one walk of the tree */
	if (c->cgroups)
		dw_cgroups_resolve(c->cgroups, ids, nids);
	free(ids);
	return 0;
}

static void caller_pending(struct dw_collector *c, const struct dw_pending_entry *rec)
{
	struct dw_caller_fig *f;

	if (!rec->caller || rec->caller >= c->ncallers || !c->callers[rec->caller].used)
		return;
	f = &c->callers[rec->caller].fig;
	f->inflight++;
	if (!f->oldest_ns || rec->call_start_ns < f->oldest_ns)
		f->oldest_ns = rec->call_start_ns;
}

size_t dw_collect_callers(const struct dw_collector *c, struct dw_caller_fig **out)
{
	struct dw_caller_fig *v;
	size_t n = 0;

	*out = NULL;
	if (!c->ncallers)
		return 0;
	v = malloc((size_t)c->ncallers * sizeof(*v));
	if (!v)
		return 0;
	for (unsigned r = 1; r < c->ncallers; r++) {
		const struct dw_caller_acc *a = &c->callers[r];
		const struct dw_dest *d;

		if (!a->used)
			continue;
		d = slot_for(c->dests, c->cap, &a->key);
		v[n] = a->fig;
		v[n].dep = d->used ? d->dep : -1;
		v[n].window_calls = dw_caller_window(&a->win, v[n].hist);
		n++;
	}
	n = dw_callers_merge(v, n);
	*out = v;
	return n;
}

void dw_collect_caller_name(const struct dw_collector *c, uint64_t id, struct dw_cgname *out)
{
	const struct dw_cgname *name = id && c->cgroups ? dw_cgroups_lookup(c->cgroups, id) : NULL;

	if (name) {
		*out = *name;
		return;
	}
	memset(out, 0, sizeof(*out));
	out->kind = DW_CG_PATH;
	if (id)
		snprintf(out->name, sizeof(out->name), "cgroup:%llu", (unsigned long long)id);
	else
		snprintf(out->name, sizeof(out->name), "unknown");
}

/* An outstanding call made on behalf of an inbound request: who waits on whom. */
static void wait_add(struct dw_collector *c, const struct dw_pending_entry *rec, struct dw_dest *callee)
{
	struct dw_wait *w;

	for (unsigned i = 0; i < c->nwaits; i++) {
		w = &c->waits[i];
		if (w->callee == callee && w->caller_port == rec->caller_port &&
		    w->caller_netns == rec->caller_netns) {
			w->count++;
			return;
		}
	}
	if (c->nwaits == c->waits_cap) {
		unsigned cap = c->waits_cap ? c->waits_cap * 2 : 16;
		struct dw_wait *p = realloc(c->waits, cap * sizeof(*p));

		if (!p)
			return;
		c->waits = p;
		c->waits_cap = cap;
	}
	c->waits[c->nwaits++] = (struct dw_wait){ .caller_netns = rec->caller_netns,
						  .caller_port = rec->caller_port,
						  .callee = callee,
						  .count = 1 };
}

static void on_pending(const struct dw_pending_entry *rec, const struct dw_dest_key *dest, void *arg)
{
	struct dw_collector *c = arg;
	struct dw_dest *d = slot_for(c->dests, c->cap, dest);

	if (!d->used || (c->refreshing && !d->hot))
		return;
	if (rec->call_start_ns) {
		/* waits are counted once per poll (a refresh re-reads only some destinations) */
		if (rec->caller_port && !c->refreshing)
			wait_add(c, rec, d);
		/* callers' rows on d were cleared by this read (read_callers) */
		caller_pending(c, rec);
		/* a multiplexed connection's may be a control frame nothing answers: shown, not judged */
		if (!(rec->flags & DW_PEND_MULTIPLEXED))
			pending_push(d, rec->call_start_ns);
		if (!d->oldest_call_ns || rec->call_start_ns < d->oldest_call_ns)
			d->oldest_call_ns = rec->call_start_ns;
	}
	if (rec->connect_start_ns) {
		d->pending_connects++;
		if (!d->oldest_connect_ns || rec->connect_start_ns < d->oldest_connect_ns)
			d->oldest_connect_ns = rec->connect_start_ns;
	}
}

static void pending_clear(struct dw_dest *d)
{
	d->oldest_call_ns = d->oldest_connect_ns = 0;
	d->pending_calls = d->pending_connects = 0;
}

static void start_interval(struct dw_collector *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		struct dw_dest *d = &c->dests[i];

		if (!d->used)
			continue;
		dw_window_advance(&d->call_win);
		dw_window_advance(&d->connect_win);
		pending_clear(d);
	}
	/* callers' windows move with their destinations' (their rows are read in the same poll) */
	for (unsigned r = 0; r < c->ncallers; r++)
		if (c->callers[r].used)
			dw_window_advance(&c->callers[r].win);
	c->nwaits = 0;
}

uint64_t dw_collect_gen(const struct dw_collector *c)
{
	/* a poll reads before it counts itself; a refresh comes after the count */
	if (c->refreshing)
		return c->polls ? c->polls - 1 : 0;
	return c->polls;
}

bool dw_dest_burst_timed(const struct dw_collector *c, const struct dw_dest *d)
{
	uint64_t now = c->polls ? c->polls - 1 : 0;

	return d->burst_seen && now - d->burst_gen < c->nslots;
}

int dw_collect_poll(struct dw_collector *c, struct dw_bpf *b)
{
	uint64_t start = dw_monotonic_ns();
	int err;

	start_interval(c);
	err = read_dests(c, b);
	if (!err)
		err = read_callers(c, b);
	/* reading the pending table is the costly part: only when a call or connect is out */
	if (!err && c->busy)
		err = dw_bpf_scan_pending(b, on_pending, c);
	if (!err)
		err = dw_bpf_globals(b, &c->globals);
	c->now_ns = dw_monotonic_ns();
	c->last_poll_ns = c->now_ns - start;
	c->polls++;
	return err;
}

int dw_collect_refresh(struct dw_collector *c, struct dw_bpf *b)
{
	struct dw_dest_stats *per_cpu = calloc(b->ncpus, sizeof(*per_cpu));
	struct dw_dest_detail *detail = malloc(sizeof(*detail));
	int err = 0;

	if (!per_cpu || !detail) {
		err = -ENOMEM;
		goto out;
	}
	/* from here on: the gen of the last poll's window slot, and only hot pending calls */
	c->refreshing = true;
	for (size_t i = 0; i < c->cap; i++) {
		struct dw_dest *d = &c->dests[i];

		if (!d->used || !d->hot)
			continue;
		pending_clear(d);
		if (!bpf_map_lookup_elem(b->stats_fd, &d->slot, per_cpu))
			refresh_dest(c, b, d, per_cpu, detail);
	}
	err = read_callers(c, b);
	if (!err)
		err = dw_bpf_scan_pending(b, on_pending, c);
	c->refreshing = false;
	c->now_ns = dw_monotonic_ns();
	c->refreshes++;
out:
	free(per_cpu);
	free(detail);
	return err;
}
