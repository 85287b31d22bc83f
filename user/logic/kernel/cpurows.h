/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The per-call counters as a reader sees them: the shared row of a
 * destination (struct dw_dest_detail) plus what its per-CPU rows (struct
 * dw_cpu_row, bpf/depwatch.h) hold and have not folded or flushed yet.
 * Pure: the rows are copied between two loads of their seq (dw_cpu_rows_read,
 * on the collector's mappings of the kernel's rows) and the copies handed here.
 */
#ifndef DW_CPUROWS_H
#define DW_CPUROWS_H

#include <stdbool.h>
#include <stddef.h>

#include "logic/base/dwtypes.h"
#include "logic/judge/judge.h"

/*
 * Whether copies taken between seq loads `before` and `after` of n rows are
 * one moment's: no fold in progress at either load, none done in between.
 */
bool dw_cpu_rows_stable(const __u32 *before, const __u32 *after, unsigned n);

/*
 * The reader's side of the rows' seqcount (struct dw_cpu_row in
 * bpf/depwatch.h, struct dw_caller_cpu_row alike): copy(arg) takes its
 * copies of n rows, and of the shared row, between a load of every row's
 * seq (the first at seq, the next stride bytes on) and a second one; again
 * while a fold moved counts from a row to the shared row in between, at
 * most tries times. before and after: room for n seqs. False if folds kept
 * coming: what copy took is not one moment's.
 */
bool dw_cpu_rows_read(const __u32 *seq, size_t stride, unsigned n, __u32 *before, __u32 *after,
		      unsigned tries, void (*copy)(void *arg), void *arg);

/*
 * The start-time slices: per ring position (slice % DW_SLICES), the newest
 * slice any shared counter or any row holds there, and the sum of the
 * counts that belong to it; counts of older slices there are stale (the
 * position was reused). Writes the slices with calls started to out (room
 * for DW_SLICES), returns how many.
 */
unsigned dw_slices_merge(const struct dw_slice *shared, const struct dw_cpu_row *rows,
			 unsigned nrows, struct dw_slice_counts *out);

/* Adds the rows' unflushed runs to hist (the shared call histogram, copied). */
void dw_hist_add_runs(__u32 *hist, const struct dw_cpu_row *rows, unsigned nrows);

/* Adds one row's DW_ROW_RUNS runs to hist, of nbuckets buckets (the caller rows' too). */
void dw_runs_add(__u32 *hist, unsigned nbuckets, const __u32 *runs);

#endif /* DW_CPUROWS_H */
