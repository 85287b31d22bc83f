// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "logic/callers/callers.h"

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int by_key(const void *pa, const void *pb)
{
	const struct dw_caller_fig *a = pa, *b = pb;

	if (a->dep != b->dep)
		return a->dep < b->dep ? -1 : 1;
	return cmp_u64(a->cgroup_id, b->cgroup_id);
}

/* Within a dependency: most in flight, then most calls, then the lower id (stable between polls). */
static int by_rank(const void *pa, const void *pb)
{
	const struct dw_caller_fig *a = pa, *b = pb;

	if (a->dep != b->dep)
		return a->dep < b->dep ? -1 : 1;
	if (a->inflight != b->inflight)
		return a->inflight > b->inflight ? -1 : 1;
	if (a->calls + a->failed != b->calls + b->failed)
		return a->calls + a->failed > b->calls + b->failed ? -1 : 1;
	return cmp_u64(a->cgroup_id, b->cgroup_id);
}

void dw_caller_fig_add(struct dw_caller_fig *a, const struct dw_caller_fig *b)
{
	a->calls += b->calls;
	a->window_calls += b->window_calls;
	a->failed += b->failed;
	a->slow += b->slow;
	a->recent += b->recent;
	a->inflight += b->inflight;
	if (b->oldest_ns && (!a->oldest_ns || b->oldest_ns < a->oldest_ns))
		a->oldest_ns = b->oldest_ns;
	for (unsigned i = 0; i < DW_CALLER_BUCKETS; i++)
		a->hist[i] += b->hist[i];
}

size_t dw_callers_merge(struct dw_caller_fig *v, size_t n)
{
	size_t out = 0;

	qsort(v, n, sizeof(*v), by_key);
	for (size_t i = 0; i < n; i++) {
		if (v[i].dep < 0)
			continue;
		if (out && !by_key(&v[out - 1], &v[i])) {
			dw_caller_fig_add(&v[out - 1], &v[i]);
			continue;
		}
		if (out != i)
			v[out] = v[i];
		out++;
	}
	qsort(v, out, sizeof(*v), by_rank);
	return out;
}

void dw_caller_take(uint64_t *calls, struct dw_window *win, uint32_t *seen, const uint32_t *now)
{
	for (unsigned i = 0; i < DW_CALLER_BUCKETS; i++) {
		uint32_t delta = now[i] - seen[i];

		if (!delta)
			continue;
		*calls += delta;	/* completed: the histogram's sum */
		/* out of memory: the window misses these, calls since start do not */
		dw_window_add(win, i, delta);
		seen[i] = now[i];
	}
}

/*
 * Not dw_window_merge: it fills DW_HIST_BUCKETS (448) buckets, and callers
 * are read at every status, scrape and alert, up to thousands of them.
 */
uint64_t dw_caller_window(const struct dw_window *win, uint64_t *hist)
{
	uint64_t total = 0;

	memset(hist, 0, DW_CALLER_BUCKETS * sizeof(*hist));
	for (unsigned i = 0; win->slots && i < win->nslots; i++) {
		const struct dw_window_slot *s = &win->slots[i];

		for (unsigned j = 0; j < s->npairs; j++) {
			/* only dw_caller_take adds: its buckets are below DW_CALLER_BUCKETS */
			if (s->pairs[j].bucket >= DW_CALLER_BUCKETS)
				continue;
			hist[s->pairs[j].bucket] += s->pairs[j].count;
			total += s->pairs[j].count;
		}
	}
	return total;
}

void dw_caller_bucket_bounds(unsigned b, double *lo, double *hi)
{
	double unit = (double)(1ULL << DW_CALLER_UNIT_SHIFT);
	unsigned k, sub;

	if (b < DW_CALLER_SUB) {
		*lo = b * unit;
		*hi = (b + 1) * unit;
		return;
	}
	k = (b - DW_CALLER_SUB) / DW_CALLER_SUB + DW_CALLER_SUB_BITS;
	sub = (b - DW_CALLER_SUB) % DW_CALLER_SUB;
	*lo = (double)(DW_CALLER_SUB + sub) * (double)(1ULL << (k - DW_CALLER_SUB_BITS)) * unit;
	*hi = (double)(DW_CALLER_SUB + sub + 1) * (double)(1ULL << (k - DW_CALLER_SUB_BITS)) * unit;
}

double dw_caller_percentile_ns(const uint64_t *hist, double q)
{
	uint64_t total = 0, seen = 0, rank;
	double lo, hi;

	for (unsigned i = 0; i < DW_CALLER_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return -1;
	/* the smallest value with at least q of the calls at or below it */
	rank = (uint64_t)(q * (double)total + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < DW_CALLER_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= rank) {
			dw_caller_bucket_bounds(i, &lo, &hi);
			return (lo + hi) / 2;
		}
	}
	return -1;
}
