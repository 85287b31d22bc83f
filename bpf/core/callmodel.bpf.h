/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model's events, where a reader starts: here a call's bytes (a
 * send begins or returns, data reaches the socket, a receive returns), in
 * core/states.bpf.h the TCP state changes and retransmits. The programs
 * (the sock backend's in sock.bpf.c, the syscalls backend's in
 * syscalls.bpf.c, those both load in tcp.bpf.c) translate kernel events
 * into these dw_on_*() calls. What they build on, one concept a header in
 * core/: conn.bpf.h (connection state, the pending table), sockread.bpf.h
 * (reading the socket), slots.bpf.h (slots and callers), rows.h (rows and
 * their per-CPU protocol), call.bpf.h (a call's start and end in the
 * counters), cascade.bpf.h (retries, service threads), closing.bpf.h (what
 * a close does to the outstanding call), connect.bpf.h (a connect's start
 * and end), bytes.bpf.h and readend.bpf.h (where an event's bytes are); the
 * transport's maps in core/maps.bpf.h, every shared layout and size in
 * depwatch.h.
 *
 * An outbound connection is a TCP socket this host connect()ed. A call starts
 * when a send of request bytes begins with no call outstanding, completes at
 * the first response byte (data reaching the socket, or a successful
 * receive, whichever the kernel reports first) and fails when the connection
 * is reset, closed or errors while the call is outstanding. Invariants, on
 * every path:
 * - a call starts only where its answer can still come (outbound:
 *   ESTABLISHED; inbound: ESTABLISHED or CLOSE_WAIT), and none is left
 *   outstanding once nothing can answer it: the socket reached TCP_CLOSE,
 *   or, outbound, the peer's FIN came (conn->closed, see outbound_start());
 * - a call starts before any of its request bytes leave (tcp_sendmsg_locked
 *   runs with the socket locked, before the copy; the syscalls backend takes
 *   the send's entry time), so its answer, even one processed inside the
 *   send itself (loopback), can never precede it;
 * - its answer is data the peer sent after it had the request: the segment
 *   that brings it acknowledges the request's first byte (snd_una past
 *   req_seq). Data that does not was sent before the peer had the request:
 *   another request's answer or a frame of the peer's own (HTTP/2), so the
 *   connection carries overlapping requests: it is marked multiplexed and
 *   its calls are burst timings, kept out of the slow-call rate unless the
 *   dependency says multiplexed = judge;
 * - a request is not a request until request bytes arrive: a bare FIN or
 *   RST on an idle connection starts and fails nothing;
 * - a message its sender closes the connection behind at once (TLS
 *   close_notify, then close()), or without having blocked since, is no
 *   call: dropped, not failed (DW_GOODBYE_NS, call_drop_goodbye()).
 *
 * An inbound connection is one a listener accepted; the same model mirrored:
 * a request starts at its first bytes (reaching the socket, or received) and
 * completes at the first bytes of the answer sent; its counters go to the
 * listening port's row (DW_FAMILY_INBOUND). The thread that receives a
 * request holds it (threads map) until it answers: an outbound call it
 * starts meanwhile is attributed to that row, which is how user space tells
 * who waits on whom.
 *
 * A call the caller abandons (closes the connection while it is outstanding)
 * is remembered per (process, dependency) for DW_RETRY_WINDOW_NS: the next
 * call the process starts to that dependency within it is a retry.
 *
 * conn->call_start_ns is claimed and released with compare-and-swap, so each
 * started call is ended exactly once even when a send and a receive race on
 * two CPUs: the in-flight count (started - completed - failed) stays exact.
 *
 * The layers above TCP (HTTP/2's streams, TLS sessions, answers' outcomes
 * and goodbyes) are reached only through the seam, layers/bytes.bpf.h: at
 * each moment of an event where a layer has its say, one layers_*() call;
 * where one returns true, a layer took the event (an h2c connection's
 * streams, a TLS session's plaintext) and the transport leaves it. What
 * the transport needs to know of a layer's state (an answer owed, a
 * goodbye, TLS) it asks the seam too (layers/conn.bpf.h): it never reads a
 * layer's room in struct dw_conn.
 *
 * Needs, included before it: core/call.bpf.h, core/cascade.bpf.h, layers/bytes.bpf.h.
 */
#ifndef DEPWATCH_CALLMODEL_BPF_H
#define DEPWATCH_CALLMODEL_BPF_H

/*
 * An inbound request starts now, where the connection can still answer
 * it. One that comes with (or after) its client's FIN is marked a goodbye:
 * dropped, not failed, if it is never answered.
 */
static __always_inline void request_begin(const struct sock *sk, struct dw_conn *conn, __u64 now,
					  enum dw_sk via)
{
	int state = state_of(sk, via);

	if (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT)
		return;
	/* not a protocol's goodbye until its first read says so (layers_read()) */
	layers_call_begins(conn, false);
	/* its first byte: the first unread (the read that takes it is looked at from there) */
	if (call_begin(conn, now, TCP_FIELD(sk, via, copied_seq), 0) && state == TCP_CLOSE_WAIT)
		conn->goodbye = 1;
}

/*
 * An answer on an inbound connection, begun at began_ns (0: now): the
 * request it answers is complete.
 */
static __always_inline void inbound_answer(const struct sock *sk, struct dw_conn *conn, __u64 began_ns)
{
	if (conn->call_start_ns)
		call_complete(conn, began_ns ? began_ns : bpf_ktime_get_ns());
	if (!conn->process_noted)
		row_process(conn, bpf_get_current_pid_tgid() >> 32);
	if (is_service_conn(conn))
		thread_release(sk);
}

/*
 * An outbound call starts at began_ns, its first byte at req_seq, with
 * rcv_seq received so far. bye: its bytes are a protocol's goodbye
 * (layers_call_bytes()), which a close drops instead of failing (dw_call_end()).
 */
static __always_inline void outbound_start(const struct sock *sk, struct dw_conn *conn, __u64 began_ns,
					   __u32 req_seq, __u32 rcv_seq, __u32 len, bool bye)
{
	struct dw_dest_stats *st;

	/* a send nothing answers (a multiplexed TLS connection's control frame) starts no call */
	if (layers_unanswered(conn, len))
		return;
	conn->rcv_seq = rcv_seq;
	/* before the claim, as req_seq: whoever ends the call sees what it was */
	layers_call_begins(conn, bye);
	note_sender(conn, 1);
	st = call_begin(conn, began_ns, req_seq, caller_of());
	if (!st)
		return;
	retry_check(conn, st, began_ns);
	/*
	 * Hooks outside the socket lock (the syscalls backend) can race the
	 * peer's FIN or a close on another CPU. Both sides write (the claim,
	 * conn->closed) with a full barrier before they read the other's: one
	 * of them sees the call and ends it. Seen here, the peer closed while
	 * the send was under way, before the call could be claimed: an answer
	 * that came with it completes the call (see answer_came()); otherwise
	 * nothing can answer it any more (a FIN that crossed the request, the
	 * reset a closed peer answers a TLS close_notify with): dropped, as in
	 * peer_closed(), since the peer's close cannot be told to have
	 * followed the request.
	 */
	if (!*(volatile __u32 *)&conn->closed)
		return;
	if (answer_came(sk, conn))
		call_complete(conn, bpf_ktime_get_ns());
	else
		call_end(conn, OUTCOME_DROPPED, bpf_ktime_get_ns());
}

/*
 * A send begins on sk (tcp_sendmsg_locked): the socket is locked and none
 * of its bytes are queued yet, so no answer can be processed before this.
 * Its bytes (msg) go to the layers first (layers_send_begin()).
 */
static __always_inline void dw_on_send_begin(const struct sock *sk, const struct msghdr *msg)
{
	struct dw_conn *conn = conn_of(sk);
	bool bye;

	if (!conn || layers_send_begin(sk, conn, msg))
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		layers_answer_sent(conn, msg);
		inbound_answer(sk, conn, 0);
		return;
	}
	if (conn->role != DW_ROLE_OUTBOUND)
		return;
	layers_request_sent(conn);
	if (conn->call_start_ns) {
		if (layers_send_behind(conn, 0, msg ? msg->msg_iter.count : 0))
			return;
		/* a request behind an outstanding call: pipelined, unless that one's answer came unseen */
		if (!answer_unseen(sk, conn, DW_SK_BTF))
			return;
		answer_unseen_end(sk, conn, DW_SK_BTF);
	}
	if (!can_be_answered(sk, DW_SK_BTF))
		return;
	/* where the call starts, and only there: what its first bytes are */
	bye = layers_call_bytes(conn, msg);
	/* rcv_seq: what had come before the call (answer_unseen(), and answer_came() on syscalls) */
	outbound_start(sk, conn, bpf_ktime_get_ns(), tcp_of(sk)->write_seq, tcp_of(sk)->rcv_nxt,
		       msg ? msg->msg_iter.count : DW_TLS_SMALL + 1, bye);
}

/*
 * A send returned ret. The syscalls backend's exit gives began_ns, when it
 * began, 0 where its socket could not be answered then (the socket's state
 * at the exit may already show the answer's FIN), rcv_seq, what the
 * socket had received then (the answer may have come since), and bye_len,
 * the length of the goodbye its first bytes start (read at the entry:
 * layers_sys_enter(); 0: none): a send of exactly that length is one. The
 * sock backend's sock_send_length, where the kernel lacks
 * tcp_sendmsg_locked, gives 0: the call starts now, if the socket can
 * still be answered (an answer processed inside the send itself then
 * comes first: see the kernel table in doc/callmodel.md).
 */
static __always_inline void dw_on_send(const struct sock *sk, int ret, __u64 began_ns, __u32 rcv_seq,
				       __u32 bye_len, enum dw_sk via)
{
	struct dw_conn *conn;

	if (ret <= 0)
		return;
	conn = conn_of(sk);
	if (!conn || layers_send(sk, conn))
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_answer(sk, conn, began_ns);
		return;
	}
	if (conn->role != DW_ROLE_OUTBOUND)
		return;
	if (conn->call_start_ns) {
		if (layers_send_behind(conn, began_ns, ret))
			return;
		if (!answer_unseen(sk, conn, via))
			return;
		answer_unseen_end(sk, conn, via);
	}
	if (via == DW_SK_PROBED ? !began_ns : !can_be_answered(sk, via))
		return;
	if (!began_ns) {
		began_ns = bpf_ktime_get_ns();
		rcv_seq = TCP_FIELD(sk, via, rcv_nxt);
	}
	outbound_start(sk, conn, began_ns, TCP_FIELD(sk, via, write_seq) - (__u32)ret, rcv_seq, ret,
		       bye_len && bye_len == (__u32)ret);
}

/* Bytes reached the socket: an outbound call's response, or an inbound request. */
static __always_inline void dw_on_data(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);
	__u32 rx_len;

	if (!conn || layers_data(sk, conn))
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		/* a bare FIN wakes the reader too: no request without request bytes */
		if (!conn->call_start_ns && unread_of(sk, DW_SK_BTF))
			request_begin(sk, conn, rx_time(sk, conn->last_ns), DW_SK_BTF);
		return;
	}
	/* measured at every arrival, outstanding call or not: the bytes of this one alone */
	rx_len = layers_data_len(sk, conn);
	if (conn->call_start_ns && !layers_answer_owed(conn) && call_answered(sk, conn, DW_SK_BTF, rx_len))
		/* completes now, or when its answer is read (layers_answered()) */
		layers_answered(sk, conn, rx_time(sk, conn->call_start_ns));
}

/* Errors that say the dependency or the path failed, not the caller's own use of the socket. */
static __always_inline int is_peer_error(int err)
{
	return err == ECONNRESET || err == ETIMEDOUT || err == EPIPE || err == ECONNABORTED ||
	       err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNREFUSED;
}

/*
 * A request received: it started when its bytes arrived (sk_data_ready), or
 * now where that is not traced (the syscalls backend).
 */
static __always_inline void inbound_recv(const struct sock *sk, struct dw_conn *conn, int ret,
					 enum dw_sk via)
{
	__u64 id;

	if (ret > 0) {
		if (!conn->call_start_ns)
			request_begin(sk, conn, bpf_ktime_get_ns(), via);
		id = bpf_get_current_pid_tgid();
		if (is_service_conn(conn))
			thread_hold(sk, conn, (__u32)id);
		row_process(conn, id >> 32);
		return;
	}
	/* end of file: the client may have only shut down its sending side; it is answered or reset later */
	if (ret < 0 && conn->call_start_ns && is_peer_error(-ret))
		call_fail_closed(conn);
}

/*
 * Whether a receive can tell anything the other hooks have not, decided
 * before the socket's state is looked up (the lookup is most of the cost).
 * With sk_data_ready traced, bytes reaching the socket already started or
 * ended the call, so a successful receive only says which thread took a
 * [service]'s request; a failed one that is no peer error (EAGAIN) says
 * nothing. An end of file and peer errors go on (a reset or a timeout also
 * changes the state, an ICMP error with IP_RECVERR does not).
 */
static __always_inline int recv_matters(int ret, int flags)
{
	if (flags & MSG_ERRQUEUE)
		return 0;
	if (ret > 0)
		return !*(volatile __u32 *)&dw_data_ready_on || *(volatile __u32 *)&dw_services_on;
	return ret == 0 || is_peer_error(-ret);
}

/*
 * A receive returned ret. A layer may want it even where the transport
 * does not (layers_recv_wants(): a TLS connection's bytes read outside an
 * SSL call); it sees it first (layers_recv()).
 */
static __always_inline void dw_on_recv(const struct sock *sk, int ret, int flags, enum dw_sk via)
{
	bool cand = layers_recv_wants(ret);
	struct dw_conn *conn;

	if (!cand && !recv_matters(ret, flags))
		return;
	conn = conn_of(sk);
	if (!conn || layers_recv(sk, conn, ret, flags, cand))
		return;
	if (cand && !recv_matters(ret, flags))
		return;
	if (layers_owned(sk, conn))
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_recv(sk, conn, ret, via);
		return;
	}
	if (!conn->call_start_ns)
		return;
	if (ret > 0) {
		/* with sk_data_ready traced, data that did not end the call there does not here */
		if (!*(volatile __u32 *)&dw_data_ready_on && call_answered(sk, conn, via, ret)) {
			call_complete(conn, bpf_ktime_get_ns());
			layers_completed(conn);
		}
		return;
	}
	/* 0 is end of file only once the peer shut down; recv(fd, buf, 0) also returns 0 */
	if (ret == 0 && (BPF_CORE_READ(sk, sk_shutdown) & RCV_SHUTDOWN))
		call_fail_closed(conn);
	else if (ret < 0 && is_peer_error(-ret))
		call_fail_closed(conn);
}

/*
 * A read ended (sock backend, sock_recv_length, in the reading task): its
 * bytes, where the read's buffers are found (core/readend.bpf.h), to the
 * layers (layers_read()), then the receive's event.
 */
static __always_inline void dw_on_read(const struct sock *sk, int ret, int flags)
{
	layers_read(sk, ret, flags);
	dw_on_recv(sk, ret, flags, DW_SK_BTF);
}

/*
 * A copy of received bytes to user space (sock backend,
 * skb_copy_datagram_iovec, where the read's end cannot be read): only the
 * layers read there (layers_copy()); the transport has had the bytes'
 * arrival and has the receive.
 */
static __always_inline void dw_on_copy(const struct sk_buff *skb, int len)
{
	layers_copy(skb, len);
}

#endif /* DEPWATCH_CALLMODEL_BPF_H */
