// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which series keep a line of their own under a cap (see topn.h). A full
 * order (pinned, weight, key) rather than a partial one: qsort is not
 * stable, and a series that flips in and out of ~other between two scrapes
 * of equal weights would look like a series that comes and goes.
 */
#include <stdlib.h>
#include <string.h>
#include "logic/view/topn.h"

static int compare(const void *pa, const void *pb)
{
	const struct dw_topn_item *a = pa, *b = pb;

	if (a->pinned != b->pinned)
		return a->pinned ? -1 : 1;
	if (a->weight != b->weight)
		return a->weight > b->weight ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return 0;
}

static size_t count_pinned(const struct dw_topn_item *items, size_t n)
{
	size_t pinned = 0;

	for (size_t i = 0; i < n; i++)
		pinned += items[i].pinned;
	return pinned;
}

void dw_topn_choose(struct dw_topn_item *items, size_t n, size_t cap, struct dw_topn_result *res)
{
	size_t pinned, room;

	memset(res, 0, sizeof(*res));
	if (n > 1)
		qsort(items, n, sizeof(*items), compare);
	if (!cap || n <= cap) {
		res->kept = res->lines = n;
		return;
	}
	/* something is folded: ~other takes one of the cap's lines */
	room = cap - 1;
	pinned = count_pinned(items, n);
	if (pinned > room)
		room = pinned;
	res->kept = room;
	res->folded = n - room;
	res->lines = room + (res->folded ? 1 : 0);
	res->over_cap = res->lines > cap;
}

void dw_topn_fold(const struct dw_topn_item *items, const struct dw_topn_result *res,
		  dw_topn_add_fn add, void *ctx)
{
	for (size_t i = res->kept; i < res->kept + res->folded; i++)
		add(ctx, items[i].key);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

size_t dw_topn_sum_u64(const struct dw_topn_item *items, const struct dw_topn_result *res,
		       const uint64_t *figures, size_t nkeys, size_t nfig, uint64_t *sum)
{
	size_t skipped = 0;

	if (!nfig)
		return 0;
	memset(sum, 0, nfig * sizeof(*sum));
	for (size_t i = res->kept; i < res->kept + res->folded; i++) {
		const uint64_t *f;

		if (items[i].key >= nkeys) {
			skipped++;
			continue;
		}
		f = figures + (size_t)items[i].key * nfig;
		for (size_t j = 0; j < nfig; j++)
			sum[j] = add_sat(sum[j], f[j]);
	}
	return skipped;
}
