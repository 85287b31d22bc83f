/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A connection's call: claiming its call slot and counting its start
 * (call_begin), and ending it exactly once (call_release, then call_end:
 * the seam's dw_call_end(), which counts it in core/count.bpf.h). Also
 * what decides that data answers the call or shows the connection carries
 * overlapping requests (multiplexed), and the sending thread's note that
 * tells a goodbye from an abandoned call.
 *
 * Needs, included before it: core/count.bpf.h (and the seam's questions,
 * layers/conn.bpf.h).
 */
#ifndef DEPWATCH_CALL_BPF_H
#define DEPWATCH_CALL_BPF_H

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
 * A connection's call ends (call_end()): what the layers say of its outcome
 * (a goodbye's close drops it, an answer's status may fail it), then
 * count_end(). Defined at the seam (layers/callend.bpf.h), after the
 * answers, which every program that ends a connection's calls includes; a
 * global function (verified once), declared here so that the transport
 * needs none of the layers before it.
 */
int dw_call_end(struct dw_conn *conn, __u64 start, int outcome, __u64 now);

/* Ends the connection's outstanding call at now (CLOCK_MONOTONIC), if nobody else did. */
static __always_inline void call_end(struct dw_conn *conn, enum call_outcome outcome, __u64 now)
{
	__u64 start;

	/* answered, its outcome owed to the reader's copy: only answer_settle() ends it (answer.bpf.h) */
	if (layers_answer_owed(conn))
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
		return !layers_control_frame(conn, rx_len);
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
	return dw_backend != DW_BACKEND_SYSCALLS && !conn->multiplexed && !conn->overlaps && !layers_tls(conn) &&
	       !layers_answer_owed(conn) && TCP_FIELD(sk, via, rcv_nxt) != conn->rcv_seq && answers_call(sk, conn, via);
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
