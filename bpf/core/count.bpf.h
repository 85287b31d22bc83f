/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A call in the counters: its start (count_start) and its end (count_end:
 * completed, failed or dropped) in its destination's counters, start
 * slice and histogram (through this CPU's row, rows.h) and in its
 * caller's row; any call, the connection's own (core/call.bpf.h) or an
 * HTTP/2 stream (h2/h2stream.bpf.h). And the reason a close's failure is
 * counted under (closed_end()). Calls nothing above it: a call's end goes
 * core/call.bpf.h -> the seam (dw_call_end(), layers/callend.bpf.h) -> here.
 *
 * Needs, included before it: core/slots.bpf.h.
 */
#ifndef DEPWATCH_COUNT_BPF_H
#define DEPWATCH_COUNT_BPF_H

#include "core/rows.h"

/*
 * OUTCOME_CLOSED: failed because the connection ended under the call (the peer's FIN or reset, a
 * timeout), its reason counted (calls_failed_closed); only call_end() takes it, and dw_call_end()
 * turns it into OUTCOME_FAILED (or OUTCOME_DROPPED for a goodbye) before anything counts the end.
 * HTTP/2 streams (h2/h2stream.bpf.h's sweeps) stay OUTCOME_FAILED: a reason there would be a branch in a sweep
 * the verifier walks at every close, for a figure the stream layer does not need.
 */
enum call_outcome { OUTCOME_COMPLETED, OUTCOME_FAILED, OUTCOME_DROPPED, OUTCOME_CLOSED };

static __always_inline struct dw_cpu_row *row_claim(const struct dw_conn *conn)
{
	__u32 idx = conn->slot * dw_ncpus + bpf_get_smp_processor_id();
	struct dw_cpu_row *row = bpf_map_lookup_elem(&cpu_rows, &idx);

	return row && seq_claim(&row->seq) ? row : 0;
}

/* A call's start at now in this CPU's row; false: count it in the shared row. */
static __always_inline bool row_start(struct dw_conn *conn, struct dw_dest_detail *detail,
				      __u64 now)
{
	struct dw_cpu_row *row = row_claim(conn);
	bool counted;

	if (!row)
		return false;
	counted = row_at(row, detail, now >> DW_SLICE_SHIFT);
	if (counted)
		row->started++;
	seq_release(&row->seq);
	return counted;
}

/*
 * A call's end in the per-call counters: its start slice (field, enum
 * dw_end_field; DW_END_NONE: none) and, if hist, its duration in the
 * histogram; in this CPU's row where it can, in the shared row otherwise.
 * -1 if its start slice is gone: it started DW_SLICES slices (8.6 s) or more
 * before now, or the shared slot already holds a newer slice (late).
 */
static __always_inline int end_count(struct dw_conn *conn, struct dw_dest_detail *detail,
				     __u64 start, __u64 now, __u32 field, bool hist, __u64 dur)
{
	__u32 slice = start >> DW_SLICE_SHIFT;
	struct dw_cpu_row *row;
	int late = 0;

	/* its ring position may be a newer slice's in some CPU's row, which this CPU cannot see */
	if (field != DW_END_NONE && (__s32)((__u32)(now >> DW_SLICE_SHIFT) - slice) >= DW_SLICES) {
		late = -1;
		field = DW_END_NONE;
	}
	if (field == DW_END_NONE && !hist)
		return late;
	row = row_claim(conn);
	if (field != DW_END_NONE && !(row && row_slice_end(row, detail, slice, field)))
		late = slice_end(detail, start, field);
	if (hist) {
		if (row)
			row_hist_add(row, detail, dur);
		else
			hist_add(detail->call, dur);
	}
	if (row)
		seq_release(&row->seq);
	return late;
}

/*
 * A call's end in this CPU's row of its caller row (struct
 * dw_caller_cpu_row); false if that row is busy (see row_claim): the
 * caller counts in the shared caller row then.
 */
static __always_inline bool caller_end_mine(__u32 idx, struct dw_caller_stats *row, int failed,
					    __u32 slow, __u64 dur)
{
	__u32 at = idx * dw_ncpus + bpf_get_smp_processor_id();
	struct dw_caller_cpu_row *mine = bpf_map_lookup_elem(&caller_cpu_rows, &at);

	if (!mine || !seq_claim(&mine->seq))
		return false;
	if (failed) {
		mine->failed++;
	} else {
		mine->slow += slow;
		runs_add(&mine->seq, mine->run, row->call, DW_CALLER_BUCKETS,
			 dw_caller_bucket(dur));
	}
	seq_release(&mine->seq);
	return true;
}

/* A call's end in its caller's row: the one array update per call that callers cost. */
static __always_inline void caller_end(const struct dw_conn *conn, int failed, __u32 slow, __u64 dur)
{
	__u32 idx = conn->caller, b;
	struct dw_caller_stats *row;

	if (!idx)
		return;
	row = bpf_map_lookup_elem(&caller_stats, &idx);
	if (!row)
		return;
	if (caller_end_mine(idx, row, failed, slow, dur))
		return;
	if (failed) {
		__sync_fetch_and_add(&row->calls_failed, 1);
		return;
	}
	if (slow)
		__sync_fetch_and_add(&row->calls_slow, 1);
	/* the completed calls are the histogram's sum */
	b = dw_caller_bucket(dur);
	barrier_var(b);
	if (b >= DW_CALLER_BUCKETS)
		return;
	barrier_var(b);
	__sync_fetch_and_add(&row->call[b], 1);
}

/*
 * Counts the end of a call that started at start, at now (CLOCK_MONOTONIC):
 * the connection's one call, or one of its HTTP/2 streams. burst: it was
 * timed on a multiplexed connection (a burst, not one request).
 */
static __always_inline void count_end(struct dw_conn *conn, __u64 start, enum call_outcome outcome,
				      __u64 now, bool burst)
{
	struct dw_dest_detail *detail;
	struct dw_dep_cfg *cfg = 0;
	struct dw_dest_stats *st;
	__u32 field = DW_END_FAILED;
	int late = 0, sliced;
	__u64 dur;

	/* a racing end may have read its clock before this call's start was claimed */
	dur = now > start ? now - start : 0;
	conn->last_ns = now;
	if (outcome == OUTCOME_COMPLETED) {
		cfg = dep_cfg_of(conn);
		field = cfg && cfg->slow_call_ns && dur > cfg->slow_call_ns ? DW_END_SLOW : DW_END_FAST;
	}
	sliced = outcome == OUTCOME_FAILED || !burst || (cfg && cfg->multiplexed);
	detail = detail_of(conn);
	if (detail && outcome != OUTCOME_DROPPED)
		late = end_count(conn, detail, start, now, sliced ? field : DW_END_NONE,
				  outcome == OUTCOME_COMPLETED, dur);
	if (outcome != OUTCOME_DROPPED)
		caller_end(conn, outcome == OUTCOME_FAILED, field == DW_END_SLOW, dur);
	st = stats_of(conn);
	if (!st)
		return;
	if (late)
		st->calls_late++;
	if (outcome == OUTCOME_DROPPED) {
		st->calls_dropped++;
		return;
	}
	if (outcome == OUTCOME_FAILED) {
		st->calls_failed++;
		return;
	}
	st->calls_completed++;
	st->calls_burst += burst;
	st->calls_slow += field == DW_END_SLOW;
	st->call_ns_sum += dur;
}

/*
 * count_end() as a global function, for the HTTP/2 walk and sweeps, which end calls inside a
 * bpf_loop callback: there the verifier walks a step again and again until the loop's states
 * converge, and an inlined count_end() with each (issues 45, 46); called, it is walked once per
 * program.
 */
__weak __noinline int dw_count_end(struct dw_conn *conn, __u64 start, __u32 outcome, __u64 now, __u32 burst)
{
	if (!conn)
		return 0;
	count_end(conn, start, outcome, now, burst);
	return 0;
}

/*
 * The connection ended under its call (OUTCOME_CLOSED), which was no protocol's goodbye (the
 * seam's dw_call_end() drops those): it fails, and the reason is counted here, where the
 * failure is sure (the call was this end's to count), so that failed_closed never exceeds failed.
 */
static __always_inline enum call_outcome closed_end(struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	st = stats_of(conn);
	if (st)
		st->calls_failed_closed++;
	return OUTCOME_FAILED;
}

/*
 * Counts a call's start at now (the connection's call, or a stream): its
 * start slice (this CPU's row, or the shared one) and calls_started; its
 * destination's counters, or 0.
 */
static __always_inline struct dw_dest_stats *count_start(struct dw_conn *conn, __u64 now)
{
	struct dw_dest_detail *detail = detail_of(conn);
	struct dw_dest_stats *st;

	if (detail && !row_start(conn, detail, now))
		slice_count(&slice_of(detail, now)->started, now >> DW_SLICE_SHIFT);
	st = stats_of(conn);
	if (st)
		st->calls_started++;
	return st;
}

#endif /* DEPWATCH_COUNT_BPF_H */
