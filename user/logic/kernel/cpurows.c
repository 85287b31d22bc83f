// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "logic/kernel/cpurows.h"

bool dw_cpu_rows_stable(const __u32 *before, const __u32 *after, unsigned n)
{
	for (unsigned c = 0; c < n; c++) {
		if ((before[c] | after[c]) & DW_ROW_FOLDING)
			return false;
		/* BUSY comes and goes with plain updates, which never move a count */
		if ((before[c] & ~DW_ROW_BUSY) != (after[c] & ~DW_ROW_BUSY))
			return false;
	}
	return true;
}

static void load_seqs(const __u32 *seq, size_t stride, unsigned n, __u32 *out, int order)
{
	for (unsigned k = 0; k < n; k++)
		out[k] = __atomic_load_n((const __u32 *)((const char *)seq + k * stride), order);
}

bool dw_cpu_rows_read(const __u32 *seq, size_t stride, unsigned n, __u32 *before, __u32 *after,
		      unsigned tries, void (*copy)(void *arg), void *arg)
{
	for (unsigned t = 0; t < tries; t++) {
		load_seqs(seq, stride, n, before, __ATOMIC_ACQUIRE);
		copy(arg);
		/* the copies happen before the second loads */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		load_seqs(seq, stride, n, after, __ATOMIC_RELAXED);
		if (dw_cpu_rows_stable(before, after, n))
			return true;
	}
	return false;
}

/* The newest slice seen at each ring position so far. */
struct ring {
	__u32 slice[DW_SLICES];
	bool seen[DW_SLICES];
};

static void ring_offer(struct ring *r, __u32 slice)
{
	unsigned i = slice % DW_SLICES;

	/* slice numbers wrap (u32 of ns >> 26): newer is a positive distance */
	if (!r->seen[i] || (__s32)(slice - r->slice[i]) > 0)
		r->slice[i] = slice;
	r->seen[i] = true;
}

static void offer_counter(struct ring *r, __u64 counter)
{
	if ((__u32)counter)
		ring_offer(r, counter >> 32);
}

static bool row_counts(const struct dw_cpu_row *row)
{
	return row->started || row->fast || row->slow || row->failed;
}

/* A shared (slice << 32 | count) counter's count, if it holds the newest slice of its position. */
static __u32 part(__u64 counter, __u32 slice)
{
	return (__u32)(counter >> 32) == slice ? (__u32)counter : 0;
}

unsigned dw_slices_merge(const struct dw_slice *shared, const struct dw_cpu_row *rows,
			 unsigned nrows, struct dw_slice_counts *out)
{
	struct dw_slice_counts acc[DW_SLICES];
	struct ring r;
	unsigned n = 0;

	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < DW_SLICES; i++) {
		offer_counter(&r, shared[i].started);
		offer_counter(&r, shared[i].fast);
		offer_counter(&r, shared[i].slow);
		offer_counter(&r, shared[i].failed);
	}
	for (unsigned c = 0; c < nrows; c++)
		if (row_counts(&rows[c]))
			ring_offer(&r, rows[c].slice);
	for (unsigned i = 0; i < DW_SLICES; i++) {
		__u32 s = r.slice[i];

		acc[i] = (struct dw_slice_counts){ .slice = s,
						   .started = part(shared[i].started, s),
						   .fast = part(shared[i].fast, s),
						   .slow = part(shared[i].slow, s),
						   .failed = part(shared[i].failed, s) };
	}
	for (unsigned c = 0; c < nrows; c++) {
		const struct dw_cpu_row *row = &rows[c];
		struct dw_slice_counts *a = &acc[row->slice % DW_SLICES];

		if (!row_counts(row) || !r.seen[row->slice % DW_SLICES] || a->slice != row->slice)
			continue;
		a->started += row->started;
		a->fast += row->fast;
		a->slow += row->slow;
		a->failed += row->failed;
	}
	/* as before the rows: a position whose newest slice has no start counted is left out */
	for (unsigned i = 0; i < DW_SLICES; i++)
		if (r.seen[i] && acc[i].started)
			out[n++] = acc[i];
	return n;
}

void dw_runs_add(__u32 *hist, unsigned nbuckets, const __u32 *runs)
{
	for (unsigned i = 0; i < DW_ROW_RUNS; i++) {
		__u32 run = runs[i], b = (run >> DW_ROW_RUN_SHIFT) - 1;

		if (run && b < nbuckets)
			hist[b] += run & DW_ROW_RUN_MAX;
	}
}

void dw_hist_add_runs(__u32 *hist, const struct dw_cpu_row *rows, unsigned nrows)
{
	for (unsigned c = 0; c < nrows; c++)
		dw_runs_add(hist, DW_HIST_BUCKETS, rows[c].run);
}
