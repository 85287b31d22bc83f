/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Bounded cardinality: which series of an output keep a line of their own
 * under a cap (--max-series for the metrics page, the same rule for the
 * status destinations list, callers and top). The configured dependencies
 * (pinned) always keep theirs; then the busiest by recent calls; the rest
 * are summed into one "~other" series, and the output says how many it
 * folded. Pure: the caller owns the figures, found again by each item's key.
 */
#ifndef DW_TOPN_H
#define DW_TOPN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name of the series the folded items are summed into. */
#define DW_TOPN_OTHER "~other"

struct dw_topn_item {
	uint32_t key;		/* the caller's index of the series; breaks ties, lowest first */
	bool pinned;		/* a configured dependency: never folded */
	uint64_t weight;	/* recent calls */
};

struct dw_topn_result {
	size_t kept;		/* items[0..kept) keep their own series */
	size_t folded;		/* items[kept..kept+folded) are summed into ~other */
	size_t lines;		/* kept, + 1 for ~other when something was folded */
	bool over_cap;		/* the pinned alone did not fit: all kept, lines > cap */
};

/*
 * Chooses under cap (0: no cap) lines in all, ~other counting as one, and
 * orders items in place: the kept first, then the folded, each pinned
 * first, then by weight descending, then by key ascending. The same items
 * (in any order) always give the same choice. items may be NULL when n is 0.
 */
void dw_topn_choose(struct dw_topn_item *items, size_t n, size_t cap, struct dw_topn_result *res);

/* Calls add(ctx, key) for each folded item of a choice, in their order. */
typedef void (*dw_topn_add_fn)(void *ctx, uint32_t key);
void dw_topn_fold(const struct dw_topn_item *items, const struct dw_topn_result *res,
		  dw_topn_add_fn add, void *ctx);

/*
 * The common case of dw_topn_fold: figures holds nfig counters per key
 * (key k's at figures[k * nfig]; every key < nkeys); sum[0..nfig) becomes
 * the folded items' totals, saturating rather than wrapping. A key out of
 * range is skipped and counted in the return value (0: all summed).
 */
size_t dw_topn_sum_u64(const struct dw_topn_item *items, const struct dw_topn_result *res,
		       const uint64_t *figures, size_t nkeys, size_t nfig, uint64_t *sum);

#endif /* DW_TOPN_H */
