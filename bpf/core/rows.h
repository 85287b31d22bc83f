/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rows and their per-CPU protocol: how a call's start and end are counted
 * in its destination's start-time slices and histogram (struct
 * dw_dest_detail, shared by all CPUs) and in a CPU's own row of them
 * (struct dw_cpu_row; the callers' struct dw_caller_cpu_row shares the
 * claim, the seqcount and the histogram runs). Pure: plain memory, atomic
 * builtins and compiler barriers, no BPF helper. The BPF side finds the
 * rows (call.bpf.h); a host build of this header is unit-tested against the
 * daemon's reader (user/logic/kernel/cpurows.c) in tests/unit/test_rows.c.
 *
 * Slices: see DW_SLICE_SHIFT in depwatch.h; a call's end counts in one of
 * its start slice's counters (enum dw_end_field).
 *
 * Per-CPU rows of the per-call counters (issue 17): the call histogram and
 * the start-time slices, counted on a line no other CPU writes, and moved to
 * the shared row (struct dw_dest_detail) now and then. One row per (slot,
 * CPU) in the cpu_rows map, at index slot * dw_ncpus + cpu: 64 bytes, one
 * cache line (the map is mmapable, so its rows are page-aligned), 16 MiB at
 * 64 CPUs x 4096 slots. Without them every call from several CPUs to one
 * destination moved the slice line and a histogram line between their
 * caches (bench/RESULTS.md, issue 17).
 *
 * Slices: the row counts the calls started, and ended, in one slice (its
 * `slice`). A start or an end in a newer slice first folds the row's counts
 * into the shared slice, then moves the row to the new slice. An end whose
 * call started in an older slice than the row's (a call longer than the rest
 * of its slice, or started on a CPU whose row was behind) counts in the
 * shared slice, as before the per-CPU rows. A row that stops moving keeps
 * its counts: readers add them by slice number, so nothing has to flush it.
 *
 * Histogram: not a per-CPU copy (1.75 KiB per slot per CPU, 0.45 GiB at 64
 * CPUs x 4096 slots) but DW_ROW_RUNS counters, each for one bucket: bucket b
 * counts in run[b % DW_ROW_RUNS] while that run holds b or nothing; a run
 * that holds another bucket is flushed first (one atomic add to the shared
 * histogram). Latencies cluster: DW_ROW_RUNS neighbouring buckets (a span of
 * 2^(10/16) = 1.5x above 1 us) never evict each other. A run is
 * (bucket + 1) << DW_ROW_RUN_SHIFT | count, 0 when empty.
 *
 * Who writes a row: only programs on its CPU, but a program in softirq
 * context (sk_data_ready, tcp_retransmit_skb) can interrupt one in task
 * context (tcp_sendmsg_locked, the syscalls backend's tracepoints) between
 * any two instructions, and a preemptible program can be preempted by a
 * task running another. So a program first claims the row: one
 * compare-and-swap setting DW_ROW_BUSY in seq (a local line: ~20 cycles).
 * A program that finds the row busy was, necessarily, interrupting its
 * holder on this CPU: it must not wait for it, and counts in the shared
 * row instead (atomic adds, exact). The holder then updates the row with
 * plain stores, which nothing else writes, and releases it.
 *
 * Readers (the daemon, another CPU) see a fold as a seqcount: the holder
 * sets DW_ROW_FOLDING (an atomic, a full barrier) before it adds the row's
 * counts to the shared row, and adds 1 at the end, which clears both bits
 * and counts one more fold (seq += DW_ROW_GEN). A reader loads seq, then
 * the rows and the shared row, then seq again (acquire order); it retries
 * if a fold was in progress at either load or seq / DW_ROW_GEN changed:
 * otherwise no count it read was in both places or in neither. Plain
 * updates (no fold) only grow the row's counts; a reader may see each
 * before or after, as it would see a shared counter's atomic add.
 *
 * Slots are never reused while the maps live (DW_SLOT_OVERFLOW's comment),
 * so rows are never reset: like the shared counters, a row's counts belong
 * to its slice number, and a reader ignores any count of a slice older than
 * the newest its ring position (slice % DW_SLICES) has seen anywhere.
 */
#ifndef DEPWATCH_ROWS_H
#define DEPWATCH_ROWS_H

#include "depwatch.h"

/* Which of a slice's counters a call's end goes to; DW_END_NONE: none (not judged, or late). */
enum dw_end_field { DW_END_FAST = 0, DW_END_SLOW = 1, DW_END_FAILED = 2, DW_END_NONE = 3 };

static __always_inline void hist_add(__u32 *hist, __u64 ns)
{
	__u32 b = dw_hist_bucket(ns);

	/* keeps the compiler from checking one copy of b and indexing with another */
	barrier_var(b);
	if (b >= DW_HIST_BUCKETS)
		return;
	barrier_var(b);
	__sync_fetch_and_add(&hist[b], 1);
}

/*
 * Adds n to a (slice << 32 | count) counter. A counter still holding an
 * older slice restarts at n; one already holding a newer slice means the
 * slot was reused while this call was outstanding: -1, the caller counts
 * the call as late.
 */
static __always_inline int slice_add(__u64 *counter, __u32 slice, __u32 n)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)counter;
		__u32 have = old >> 32;
		__u64 new;

		if (have == slice)
			new = old + n;
		else if ((__s32)(slice - have) > 0)
			new = ((__u64)slice << 32) | n;
		else
			return -1;
		if (__sync_val_compare_and_swap(counter, old, new) == old)
			return 0;
	}
	return -1;
}

static __always_inline int slice_count(__u64 *counter, __u32 slice)
{
	return slice_add(counter, slice, 1);
}

static __always_inline struct dw_slice *slice_of(struct dw_dest_detail *detail, __u64 start_ns)
{
	return &detail->slices[(start_ns >> DW_SLICE_SHIFT) % DW_SLICES];
}

/*
 * Counts the end of a call that started at start_ns in its shared start
 * slice; -1 if the slot moved on. The slot may still show an older slice:
 * the call's start may be in a CPU's row (struct dw_cpu_row), not folded yet.
 */
static __always_inline int slice_end(struct dw_dest_detail *detail, __u64 start_ns, __u32 field)
{
	struct dw_slice *sl = slice_of(detail, start_ns);
	__u32 slice = start_ns >> DW_SLICE_SHIFT;
	__u32 have = *(volatile __u64 *)&sl->started >> 32;

	if ((__s32)(slice - have) < 0)
		return -1;
	if (field == DW_END_FAST)
		return slice_count(&sl->fast, slice);
	if (field == DW_END_SLOW)
		return slice_count(&sl->slow, slice);
	return slice_count(&sl->failed, slice);
}

/* ---- Per-CPU rows: the claim, the folds and the seqcount (see the top of this file) ---- */

/*
 * Claims this CPU's row of the connection's slot; 0 if there is none, or it
 * is busy: then this program interrupted the row's holder on this CPU, which
 * cannot go on before this program returns, so waiting would never end. The
 * caller counts in the shared row instead.
 */
static __always_inline bool seq_claim(__u32 *seqp)
{
	__u32 seq = *(volatile __u32 *)seqp;

	if (seq & DW_ROW_BUSY)
		return false;
	/* fails only if a program that interrupted us between the load and here folded the row */
	return __sync_val_compare_and_swap(seqp, seq, seq | DW_ROW_BUSY) == seq;
}

/* Nothing else writes seq while the row is busy: a plain store releases it. */
static __always_inline void seq_release(__u32 *seqp)
{
	__u32 seq = *(volatile __u32 *)seqp;

	barrier();
	*(volatile __u32 *)seqp = seq & ~DW_ROW_BUSY;
}

/* Readers retry while DW_ROW_FOLDING is set: what the row holds is moving to the shared row. */
static __always_inline void seq_fold_begin(__u32 *seqp)
{
	__sync_fetch_and_or(seqp, DW_ROW_FOLDING);
}

/* Clears DW_ROW_FOLDING and counts one more fold (the readers' seqcount); the row stays busy. */
static __always_inline void seq_fold_end(__u32 *seqp)
{
	__sync_fetch_and_add(seqp, DW_ROW_GEN - DW_ROW_FOLDING);
}

/*
 * slice_add for a fold. Every CPU that called the destination folds the
 * same slice into the same counters at the same moment (when the clock
 * enters the next slice), so a compare-and-swap loop would fail there under
 * contention: once the counter holds the slice (after the first fold), the
 * others add to it with one atomic add instead, which cannot fail. If the
 * counter moved to a newer slice between the load and the add (its ring
 * position reused: this row sat still for 8.6 s, and another CPU took the
 * position at that very moment), the add is taken back and the counts are
 * dropped, as a reader would have dropped them anyway.
 */
static __always_inline void fold_add(__u64 *counter, __u32 slice, __u32 n)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)counter;
		__u32 have = old >> 32;

		if (have == slice) {
			old = __sync_fetch_and_add(counter, n);
			if ((__u32)(old >> 32) == slice)
				return;
			__sync_fetch_and_add(counter, -(__u64)n);
			return;
		}
		if ((__s32)(slice - have) < 0)
			return;
		if (__sync_val_compare_and_swap(counter, old, ((__u64)slice << 32) | n) == old)
			return;
	}
}

/*
 * Folds the claimed row's slice counts into the shared slice they belong to
 * and moves the row to slice. Always under the seqcount, even with nothing
 * to fold: a reader must never see the new slice number with the old
 * counts, or the reverse. A shared counter already on a newer slice (the
 * ring position was reused: the row sat still for 8.6 s) takes nothing: a
 * reader would ignore those counts anyway.
 */
static __always_inline void row_move(struct dw_cpu_row *row, struct dw_dest_detail *detail,
				     __u32 slice)
{
	struct dw_slice *sl = &detail->slices[row->slice % DW_SLICES];
	__u32 was = row->slice;

	seq_fold_begin(&row->seq);
	if (row->started)
		fold_add(&sl->started, was, row->started);
	if (row->fast)
		fold_add(&sl->fast, was, row->fast);
	if (row->slow)
		fold_add(&sl->slow, was, row->slow);
	if (row->failed)
		fold_add(&sl->failed, was, row->failed);
	row->started = row->fast = row->slow = row->failed = 0;
	row->slice = slice;
	seq_fold_end(&row->seq);
}

/*
 * Brings the claimed row to slice if it is behind; false if the row is
 * already on a newer slice (a call that started before the row's slice
 * counts in the shared one).
 */
static __always_inline bool row_at(struct dw_cpu_row *row, struct dw_dest_detail *detail,
				   __u32 slice)
{
	if (row->slice == slice)
		return true;
	if ((__s32)(slice - row->slice) < 0)
		return false;
	row_move(row, detail, slice);
	return true;
}

/* An end in its start slice, in the claimed row (field: enum dw_end_field); false: not. */
static __always_inline bool row_slice_end(struct dw_cpu_row *row, struct dw_dest_detail *detail,
					  __u32 slice, __u32 field)
{
	if (!row_at(row, detail, slice))
		return false;
	if (field == DW_END_FAST)
		row->fast++;
	else if (field == DW_END_SLOW)
		row->slow++;
	else
		row->failed++;
	return true;
}

/*
 * Counts bucket b (< nbuckets, a constant once inlined) in runs, the
 * DW_ROW_RUNS runs of a claimed row whose seq is seqp. A run holding
 * another bucket, or full, is flushed to the shared histogram hist first,
 * under the seqcount (a reader sees its count in one place only).
 */
static __always_inline void runs_add(__u32 *seqp, __u32 *runs, __u32 *hist, __u32 nbuckets, __u32 b)
{
	__u32 i, run, want, old;

	barrier_var(b);
	if (b >= nbuckets)
		return;
	want = (b + 1) << DW_ROW_RUN_SHIFT;
	i = b % DW_ROW_RUNS;
	barrier_var(i);
	if (i >= DW_ROW_RUNS)
		return;
	run = runs[i];
	if (!run) {
		runs[i] = want | 1;
		return;
	}
	if ((run & ~DW_ROW_RUN_MAX) == want && (run & DW_ROW_RUN_MAX) < DW_ROW_RUN_MAX) {
		runs[i] = run + 1;
		return;
	}
	old = (run >> DW_ROW_RUN_SHIFT) - 1;
	barrier_var(old);
	seq_fold_begin(seqp);
	if (old < nbuckets)
		__sync_fetch_and_add(&hist[old], run & DW_ROW_RUN_MAX);
	runs[i] = want | 1;
	seq_fold_end(seqp);
}

/* A completed call's duration in the claimed row's run of its bucket (runs_add). */
static __always_inline void row_hist_add(struct dw_cpu_row *row, struct dw_dest_detail *detail,
					 __u64 ns)
{
	runs_add(&row->seq, row->run, detail->call, DW_HIST_BUCKETS, dw_hist_bucket(ns));
}

#endif /* DEPWATCH_ROWS_H */
