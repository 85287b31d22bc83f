/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A call in the counters: claiming a connection's call slot and counting
 * its start (call_begin), and ending it exactly once (call_release, then
 * call_end: completed, failed or dropped) in its destination's counters,
 * start slice and histogram (through this CPU's row, rows.h) and in its
 * caller's row. count_start() and count_end() count any call,
 * the connection's own or an HTTP/2 stream (streams.bpf.h). Also what
 * decides that data answers the call or shows the connection carries
 * overlapping requests (multiplexed), and the sending thread's note that
 * tells a goodbye from an abandoned call.
 *
 * Needs, included before it: core/slots.bpf.h, answer/outcome.bpf.h (a call's end counts its
 * answer's status).
 */
#ifndef DEPWATCH_CALL_BPF_H
#define DEPWATCH_CALL_BPF_H

#include "core/rows.h"

/* enum call_outcome: outcome.bpf.h */

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
 * Releases the outstanding call; returns its start, or 0 if someone else
 * ended it. The pending entry is cleared only if it still shows this call:
 * a racing send may have published the next one already.
 */
static __always_inline __u64 call_release(struct dw_conn *conn)
{
	__u64 start = conn->call_start_ns;
	struct dw_pending_entry *e;

	if (!start)
		return 0;
	if (__sync_val_compare_and_swap(&conn->call_start_ns, start, 0) != start)
		return 0;
	e = pend_of(conn);
	if (e)
		__sync_val_compare_and_swap(&e->call_start_ns, start, 0);
	return start;
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
 * The connection ended under its call (OUTCOME_CLOSED): the close that answers a protocol's
 * goodbye drops it (goodbye.h); any other fails it, and the reason is counted here, where the
 * failure is sure (the call was this end's to count), so that failed_closed never exceeds failed.
 */
static __always_inline enum call_outcome closed_end(struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	if (conn->answer.bye == DW_BYE_YES)
		return OUTCOME_DROPPED;
	st = stats_of(conn);
	if (st)
		st->calls_failed_closed++;
	return OUTCOME_FAILED;
}

/*
 * A connection's call ends (call_end()): a goodbye's failure (the close
 * that answers it) dropped; a close's failure counted (closed_end()); its
 * answer's status, where one was read (outcome.bpf.h), counted, a failure
 * failing it; then count_end(). A global function, verified once: inlined,
 * count_end() would be walked again at each of the many places a call can
 * end, once per outcome.
 */
__weak __noinline int dw_call_end(struct dw_conn *conn, __u64 start, int outcome, __u64 now)
{
	if (!conn)
		return 0;
	/* a protocol's goodbye (goodbye.h) that a close ended: no call at all */
	if (outcome == OUTCOME_CLOSED)
		outcome = closed_end(conn);
	else if (outcome == OUTCOME_FAILED && conn->answer.bye == DW_BYE_YES)
		outcome = OUTCOME_DROPPED;
	if (conn->answer.status)
		outcome = outcome_end(conn, outcome);
	count_end(conn, start, outcome, now, conn->multiplexed);
	return 0;
}

/* Ends the connection's outstanding call at now (CLOCK_MONOTONIC), if nobody else did. */
static __always_inline void call_end(struct dw_conn *conn, enum call_outcome outcome, __u64 now)
{
	__u64 start;

	/* answered, its outcome owed to the reader's copy: only answer_settle() ends it (answer.bpf.h) */
	if (*(volatile __u64 *)&conn->answer.ns)
		return;
	start = call_release(conn);
	if (start)
		dw_call_end(conn, start, outcome, now);
}

static __always_inline void call_complete(struct dw_conn *conn, __u64 now)
{
	call_end(conn, OUTCOME_COMPLETED, now);
}

/* Failures are rare: they read the clock. */
static __always_inline void call_fail(struct dw_conn *conn)
{
	call_end(conn, OUTCOME_FAILED, bpf_ktime_get_ns());
}

/*
 * The connection ended under the outstanding call (the peer's FIN or reset, a timeout; inbound,
 * any close of an unanswered request): failed, and named so (failed_closed), unless the call was
 * a goodbye that the close answers.
 */
static __always_inline void call_fail_closed(struct dw_conn *conn)
{
	call_end(conn, OUTCOME_CLOSED, bpf_ktime_get_ns());
}

/*
 * The sending thread, noted before a call is claimed (process context;
 * 0 where there is none): a thread that waits for an answer blocks (in
 * recv(), poll(), epoll_wait() or a futex), which counts a voluntary
 * context switch; being preempted does not.
 */
static __always_inline void note_sender(struct dw_conn *conn, int in_task)
{
	struct task_struct *task = bpf_get_current_task_btf();

	conn->sender_tid = in_task ? task->pid : 0;
	conn->sender_nvcsw = (__u32)task->nvcsw;
}

/* Whether the current thread sent the outstanding call and has not blocked since. */
static __always_inline int sender_never_waited(const struct dw_conn *conn)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return conn->sender_tid && (__u32)task->pid == conn->sender_tid &&
	       (__u32)task->nvcsw == conn->sender_nvcsw;
}

/*
 * The caller closed the connection under its outstanding call: within
 * DW_GOODBYE_NS of its start, or from the thread that sent it without
 * having blocked since (a goodbye whose close was preempted on a loaded
 * host), it was a goodbye nobody waited for, dropped. Returns 1 if it was.
 */
static __always_inline int call_drop_goodbye(struct dw_conn *conn, __u64 now)
{
	__u64 start = conn->call_start_ns;

	if (!start)
		return 0;
	if (now - start > DW_GOODBYE_NS && !sender_never_waited(conn))
		return 0;
	call_end(conn, OUTCOME_DROPPED, now);
	return 1;
}

/*
 * The connection carries overlapping requests: its calls are burst timings
 * from now on, and its outstanding one's age no longer makes the
 * dependency slow (DW_PEND_MULTIPLEXED). Counted once.
 */
static __always_inline void conn_mark_multiplexed(struct dw_conn *conn)
{
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;

	if (conn->multiplexed)
		return;
	conn->multiplexed = 1;
	e = pend_of(conn);
	if (e)
		e->flags |= DW_PEND_MULTIPLEXED;
	st = stats_of(conn);
	if (st)
		st->conns_multiplexed++;
}

/*
 * Data came that the peer sent before it had the outstanding request:
 * another request's answer still streaming (pipelining, HTTP/2), or a
 * frame of the peer's own. Once is no pattern (two goodbyes that cross,
 * TLS close_notify both ways); the second time the connection is counted
 * multiplexed, once.
 */
static __always_inline void conn_overlap(struct dw_conn *conn)
{
	if (!conn->multiplexed && ++conn->overlaps >= 2)
		conn_mark_multiplexed(conn);
}

/*
 * Data reached an outbound connection with a call outstanding: its answer,
 * or an overlap. On a connection known to be multiplexed any data ends the
 * burst: a send there may be a control frame that nothing answers (an
 * HTTP/2 WINDOW_UPDATE), and it must not stay outstanding for that. On a
 * multiplexed TLS connection, data of at most DW_TLS_SMALL bytes (rx_len)
 * is a control frame itself (the peer's PING ACK): it ends nothing, so a
 * hang behind PINGs stays visible.
 */
static __always_inline int call_answered(const struct sock *sk, struct dw_conn *conn, enum dw_sk via,
					 __u32 rx_len)
{
	if (conn->multiplexed)
		return !conn->tls.hello || rx_len > DW_TLS_SMALL;
	if (answers_call(sk, conn, via))
		return 1;
	conn_overlap(conn);
	return 0;
}

/*
 * The outstanding call was answered, and no sk_data_ready said so: its
 * request is acknowledged and bytes came after it began (rcv_seq, rcv_nxt
 * at its start), none of which a data_ready saw (it would have ended the
 * call, or counted an overlap: a connection that never had one). Seen on
 * loopback under load (test_load: about one answer in two million, after a
 * retransmission timeout; the kernel's data_ready program reports no
 * recursion miss): without this, the reader takes the answer, sends the
 * next request behind a call still outstanding, and two calls count as
 * one. Sock backend (the syscalls backend ends calls at the receive).
 */
static __always_inline bool answer_unseen(const struct sock *sk, const struct dw_conn *conn, enum dw_sk via)
{
	return dw_backend != DW_BACKEND_SYSCALLS && !conn->multiplexed && !conn->overlaps && !conn->tls.hello &&
	       !conn->answer.ns && TCP_FIELD(sk, via, rcv_nxt) != conn->rcv_seq && answers_call(sk, conn, via);
}

/*
 * Ends an outstanding call whose answer came unseen (answer_unseen()): at
 * the newest segment TCP processed for the socket, no earlier than its
 * answer's, where that is after the call began (rx_time()); now otherwise.
 */
static __always_inline void answer_unseen_end(const struct sock *sk, struct dw_conn *conn, enum dw_sk via)
{
	__u64 t = TCP_FIELD(sk, via, tcp_clock_cache);

	call_complete(conn, t > conn->call_start_ns ? t : bpf_ktime_get_ns());
	global_count(G_answers_unseen);
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

/*
 * Claims the connection's call slot for a call starting now whose first
 * byte is req_seq, on behalf of the inbound row caller (0 for none); its
 * counters, or 0.
 */
static __always_inline struct dw_dest_stats *call_begin(struct dw_conn *conn, __u64 now, __u32 req_seq,
							 const struct dw_thread_req *caller)
{
	struct dw_pending_entry *e;

	/* before the claim: whoever sees the call sees its sequence number */
	conn->req_seq = req_seq;
	if (__sync_val_compare_and_swap(&conn->call_start_ns, 0, now) != 0)
		return 0;
	e = pend_of(conn);
	if (e) {
		e->caller_netns = caller ? caller->netns : 0;
		e->caller_port = caller ? caller->port : 0;
		e->call_start_ns = now;
	}
	return count_start(conn, now);
}

#endif /* DEPWATCH_CALL_BPF_H */
