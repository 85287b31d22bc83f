/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the status renderers share (report.c: JSON and the helpers;
 * report_text.c: the text table and top's TSV): the rows as shown, the
 * callers of a dependency, the --max-series folding.
 */
#ifndef DW_REPORT_VIEW_H
#define DW_REPORT_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collect/collect.h"
#include "logic/depset/depset.h"

/* Callers listed on their own per dependency in status; the rest are summed into ~other. */
#define DW_STATUS_CALLERS 20

/* The callers of one dependency: a range of dw_collect_callers' array. */
struct dep_callers {
	const struct dw_caller_fig *v;
	size_t n;
};

/* Window percentiles of one destination, in ms; -1 when the window has no calls. */
struct dest_view {
	const struct dw_dest *d;
	char dest[64];
	uint64_t window_calls;
	double p50, p90, p99;
	double connect_p50, connect_p99;
	double oldest_ms, oldest_connect_ms;
	bool burst;		/* the window's calls include burst timings (multiplexed connections) */
};

/* What the destinations table's cap folded: one "~other" line. */
struct folded_rows {
	size_t n;
	uint64_t calls, failed, inflight, connects, cfail;
};

/* Marks a latency cell as burst timings (multiplexed connections): "12.3ms*". */
#define BURST_MARK "*"
#define BURST_LEGEND \
	"* latency of multiplexed or pipelined connections: burst timings, not one request's\n"

/* How long ago start was at now, in ms. */
double rv_age_ms(uint64_t now, uint64_t start);

/* Over a dependency's destinations: multiplexed connections, and whether any is burst-timed. */
uint64_t rv_dep_mux(const struct dw_collector *c, const struct dw_dep *dep, bool *burst);

/* The rows, sorted by destination text; the caller frees. */
struct dest_view *rv_views_of(const struct dw_collector *c, size_t *n);

/*
 * The callers of dependency index dep, from dw_collect_callers' array
 * (ordered by dependency index), walked in increasing dep: *k is where the
 * walk stands, 0 at first.
 */
struct dep_callers rv_callers_of(const struct dw_caller_fig *callers, size_t ncallers, size_t *k,
				 unsigned dep);

/*
 * --max-series for the destinations table (logic/view/series.h): the kept keep
 * their rows (in their order); the rest are summed into *f. Returns the rows kept.
 */
size_t rv_cap_views(struct dest_view *views, size_t n, const struct dw_deps *deps, unsigned cap,
		    struct folded_rows *f);

/*
 * --max-series for the dependencies table (logic/view/series.h): a calloc'ed
 * flag per dependency index (true: folded), NULL when nothing is.
 * *nfolded and *sum: what was folded.
 */
bool *rv_fold_deps(const struct dw_deps *deps, unsigned cap, size_t *nfolded,
		   struct dw_dep_figs *sum);

#endif /* DW_REPORT_VIEW_H */
