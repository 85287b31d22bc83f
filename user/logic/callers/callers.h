/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Callers (issue 16): figures per (dependency, caller cgroup), from the
 * kernel's per (destination, cgroup) rows. Pure: the collector fills the
 * rows, the outputs merge them per dependency and name the cgroups.
 */
#ifndef DW_CALLERS_H
#define DW_CALLERS_H

#include <stddef.h>
#include <stdint.h>
#include "logic/base/dwtypes.h"
#include "logic/base/window.h"

struct dw_caller_fig {
	uint64_t cgroup_id;		/* 0: unknown (the owner could not be found) */
	int dep;			/* the dependency (index in the set), -1: none yet */
	unsigned slot;			/* its destination's slot (one of them, after a merge) */
	uint64_t calls;			/* completed, since the daemon started */
	uint64_t window_calls;		/* completed in the window (the sum of hist) */
	uint64_t failed, slow;
	uint64_t recent;		/* calls completed or failed in the last interval */
	uint64_t inflight;		/* outstanding now (the pending table) */
	uint64_t oldest_ns;		/* start of the oldest outstanding call, 0: none */
	/*
	 * Completed call durations in the window, as the dependency's own
	 * percentiles are: a caller's p99 since start would be diluted by
	 * hours of history and disagree with its dependency's on one screen.
	 */
	uint64_t hist[DW_CALLER_BUCKETS];
};

/*
 * Sums the rows of equal (dep, cgroup_id) into one, drops rows of no
 * dependency (dep < 0), and orders the rest by dependency, then most in
 * flight first, then most calls, then the lower cgroup id. Returns how many
 * rows are left at the front of v.
 */
size_t dw_callers_merge(struct dw_caller_fig *v, size_t n);

/* Adds b's figures into a (the oldest call stays the oldest). */
void dw_caller_fig_add(struct dw_caller_fig *a, const struct dw_caller_fig *b);

/*
 * One read of a caller row: the kernel's cumulative histogram now, against
 * seen (what was last read, updated). Each bucket's delta, modulo 2^32 (the
 * kernel's u32 buckets wrap), goes to calls since start and to the window's
 * current slot. A row seen for the first time has seen all zero: what it
 * counted before goes in whole, as a new destination's does.
 */
void dw_caller_take(uint64_t *calls, struct dw_window *win, uint32_t *seen, const uint32_t *now);

/*
 * The window's calls as a caller histogram: hist[DW_CALLER_BUCKETS] filled
 * (caller buckets, not the destinations' DW_HIST_BUCKETS), the total returned.
 */
uint64_t dw_caller_window(const struct dw_window *win, uint64_t *hist);

/* The q-quantile of a caller histogram in ns (its bucket's middle), -1 with no calls. */
double dw_caller_percentile_ns(const uint64_t *hist, double q);

/* A bucket's bounds in ns: [lo, hi). */
void dw_caller_bucket_bounds(unsigned b, double *lo, double *hi);

#endif /* DW_CALLERS_H */
