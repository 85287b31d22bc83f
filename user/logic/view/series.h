/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --max-series: which series of an output keep a line of their own, alike
 * in status (the table and --json) and /metrics. This file says who is
 * pinned and how busy each one is; topn.h chooses under the cap and orders
 * (dw_topn_choose), and the output sums the rest into "~other".
 *
 * - dependencies: the configured ones are pinned, then the busiest by call
 *   rate (status, status --json, /metrics);
 * - destinations: those of configured dependencies are pinned, then the
 *   busiest by calls in the window (status, status --json);
 * - callers: the busiest by calls since the last poll (/metrics).
 *
 * Pure.
 */
#ifndef DW_SERIES_H
#define DW_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "logic/callers/callers.h"
#include "logic/depset/depset.h"
#include "logic/view/topn.h"

/*
 * The cap of every output unless --max-series says otherwise (0: none).
 * It keeps the metrics page under 1 MiB (measured: bench/scale.py).
 */
#define DW_MAX_SERIES_DEFAULT 150

/*
 * Chooses under cap (dw_topn_choose) and sets fold[key] for each item it
 * folds (fold: a flag per key, all false); returns how many it folded.
 */
size_t dw_series_fold(struct dw_topn_item *items, size_t n, unsigned cap, bool *fold);

/*
 * The dependencies that cap folds, of those every output shows
 * (dw_dep_shown): fold[i] for deps->deps[i] (room for deps->n, all
 * false). Returns how many; 0 also when out of memory (none folded).
 */
size_t dw_series_fold_deps(const struct dw_deps *deps, unsigned cap, bool *fold);

/* A destination's item, with window_calls its calls in the window. */
struct dw_topn_item dw_series_dest_item(const struct dw_deps *deps, const struct dw_dest *d,
					uint64_t window_calls, uint32_t key);

/* A caller's item. */
struct dw_topn_item dw_series_caller_item(const struct dw_caller_fig *f, uint32_t key);

#endif /* DW_SERIES_H */
