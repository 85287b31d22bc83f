// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include "logic/view/series.h"

size_t dw_series_fold(struct dw_topn_item *items, size_t n, unsigned cap, bool *fold)
{
	struct dw_topn_result res;

	dw_topn_choose(items, n, cap, &res);
	for (size_t i = res.kept; i < res.kept + res.folded; i++)
		fold[items[i].key] = true;
	return res.folded;
}

/* Configured dependencies keep theirs, then the busiest by call rate. */
static struct dw_topn_item dep_item(const struct dw_dep *dep, uint32_t key)
{
	/* calls per ms: a rate below one call a second still ranks */
	return (struct dw_topn_item){ .key = key, .pinned = dep->id != 0,
				      .weight = dep->rates.call_rate > 0 ?
						dep->rates.call_rate * 1000 : 0 };
}

size_t dw_series_fold_deps(const struct dw_deps *deps, unsigned cap, bool *fold)
{
	struct dw_topn_item *items;
	size_t n = 0, folded;

	if (!cap || !deps->n)
		return 0;
	items = calloc(deps->n, sizeof(*items));
	if (!items)
		return 0;
	for (unsigned i = 0; i < deps->n; i++)
		if (dw_dep_shown(&deps->deps[i]))
			items[n++] = dep_item(&deps->deps[i], i);
	folded = dw_series_fold(items, n, cap, fold);
	free(items);
	return folded;
}

struct dw_topn_item dw_series_dest_item(const struct dw_deps *deps, const struct dw_dest *d,
					uint64_t window_calls, uint32_t key)
{
	return (struct dw_topn_item){ .key = key, .weight = window_calls,
				      .pinned = d->dep >= 0 && deps->deps[d->dep].id };
}

struct dw_topn_item dw_series_caller_item(const struct dw_caller_fig *f, uint32_t key)
{
	return (struct dw_topn_item){ .key = key, .weight = f->recent };
}
