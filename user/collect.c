// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "collect.h"
#include "loader.h"
#include "log.h"

uint64_t dw_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t key_hash(const struct dw_dest_key *key)
{
	const unsigned char *p = (const unsigned char *)key;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < sizeof(*key); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static struct dw_dest *slot_for(struct dw_dest *tab, size_t cap, const struct dw_dest_key *key)
{
	size_t i = key_hash(key) & (cap - 1);

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
	d->key = *key;
	d->used = true;
	c->count++;
	return d;
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
	}
	free(c->dests);
	memset(c, 0, sizeof(*c));
}

static void sum_cpus(const struct dw_dest_stats *per_cpu, int ncpus, struct dw_dest_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ncpus; i++) {
		const struct dw_dest_stats *s = &per_cpu[i];

		out->calls_started += s->calls_started;
		out->calls_completed += s->calls_completed;
		out->calls_failed += s->calls_failed;
		out->call_ns_sum += s->call_ns_sum;
		out->connect_attempts += s->connect_attempts;
		out->connects_ok += s->connects_ok;
		out->connect_refused += s->connect_refused;
		out->connect_timedout += s->connect_timedout;
		out->connect_other += s->connect_other;
		out->connect_ns_sum += s->connect_ns_sum;
		out->retransmits += s->retransmits;
		if (s->last_call_ns > out->last_call_ns) {
			out->last_call_ns = s->last_call_ns;
			out->last_pid = s->last_pid;
			memcpy(out->last_comm, s->last_comm, sizeof(out->last_comm));
		}
	}
}

/* Kernel buckets are u32 and wrap; the difference since the last read does not. */
static void add_deltas(struct dw_window *win, __u32 *seen, const __u32 *now)
{
	for (unsigned i = 0; i < DW_HIST_BUCKETS; i++) {
		__u32 delta = now[i] - seen[i];

		if (delta)
			dw_window_add(win, i, delta);
		seen[i] = now[i];
	}
}

static void read_hist(struct dw_bpf *b, struct dw_dest *d, struct dw_dest_hist *hist)
{
	if (bpf_map_lookup_elem(b->hists_fd, &d->key, hist))
		return;
	add_deltas(&d->call_win, d->seen_call, hist->call);
	add_deltas(&d->connect_win, d->seen_connect, hist->connect);
}

static void update_dest(struct dw_collector *c, struct dw_bpf *b, const struct dw_dest_key *key,
			const struct dw_dest_stats *per_cpu, struct dw_dest_hist *hist)
{
	struct dw_dest *d = dest_get(c, key);
	struct dw_dest_stats sum;

	if (!d) {
		dw_err("out of memory for destination figures");
		return;
	}
	sum_cpus(per_cpu, b->ncpus, &sum);
	/* the histograms only change when something completed */
	if (sum.calls_completed != d->sum.calls_completed || sum.connects_ok != d->sum.connects_ok)
		read_hist(b, d, hist);
	d->sum = sum;
}

static int read_dests(struct dw_collector *c, struct dw_bpf *b)
{
	struct dw_dest_stats *per_cpu = calloc(b->ncpus, sizeof(*per_cpu));
	struct dw_dest_hist *hist = malloc(sizeof(*hist));
	struct dw_dest_key key, next;
	struct dw_dest_key *prev = NULL;
	int err = 0;

	if (!per_cpu || !hist) {
		err = -ENOMEM;
		goto out;
	}
	while (bpf_map_get_next_key(b->dests_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(b->dests_fd, &key, per_cpu))
			continue;
		update_dest(c, b, &key, per_cpu, hist);
	}
out:
	free(per_cpu);
	free(hist);
	return err;
}

static void on_pending(const struct dw_pending *rec, void *arg)
{
	struct dw_collector *c = arg;
	struct dw_dest *d = slot_for(c->dests, c->cap, &rec->dest);

	if (!d->used)
		return;
	if (rec->kind == DW_PENDING_CALL) {
		d->pending_calls++;
		if (!d->oldest_call_ns || rec->start_ns < d->oldest_call_ns)
			d->oldest_call_ns = rec->start_ns;
	} else if (rec->kind == DW_PENDING_CONNECT) {
		d->pending_connects++;
		if (!d->oldest_connect_ns || rec->start_ns < d->oldest_connect_ns)
			d->oldest_connect_ns = rec->start_ns;
	}
}

static void start_interval(struct dw_collector *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		struct dw_dest *d = &c->dests[i];

		if (!d->used)
			continue;
		dw_window_advance(&d->call_win);
		dw_window_advance(&d->connect_win);
		d->oldest_call_ns = d->oldest_connect_ns = 0;
		d->pending_calls = d->pending_connects = 0;
	}
}

int dw_collect_poll(struct dw_collector *c, struct dw_bpf *b)
{
	uint64_t start = dw_monotonic_ns();
	int err;

	start_interval(c);
	err = read_dests(c, b);
	if (!err)
		err = dw_bpf_scan_pending(b, on_pending, c);
	if (!err)
		err = dw_bpf_globals(b, &c->globals);
	c->now_ns = dw_monotonic_ns();
	c->last_poll_ns = c->now_ns - start;
	c->polls++;
	return err;
}

uint64_t dw_dest_inflight(const struct dw_dest *d)
{
	uint64_t ended = d->sum.calls_completed + d->sum.calls_failed;

	return d->sum.calls_started > ended ? d->sum.calls_started - ended : 0;
}

uint64_t dw_dest_connect_failures(const struct dw_dest *d)
{
	return d->sum.connect_refused + d->sum.connect_timedout + d->sum.connect_other;
}

uint64_t dw_dest_connecting(const struct dw_dest *d)
{
	uint64_t ended = d->sum.connects_ok + dw_dest_connect_failures(d);

	return d->sum.connect_attempts > ended ? d->sum.connect_attempts - ended : 0;
}

void dw_dest_format(const struct dw_dest_key *key, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (key->family == DW_FAMILY_OVERFLOW) {
		snprintf(buf, len, "overflow");
		return;
	}
	inet_ntop(key->family, key->addr, addr, sizeof(addr));
	if (key->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", addr, key->port);
	else
		snprintf(buf, len, "%s:%u", addr, key->port);
}
