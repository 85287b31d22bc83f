/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a close does to the outstanding call: the peer's FIN or reset, the
 * caller's own close() or abort, an inbound client leaving. Each ends the
 * call as completed (its answer had arrived), dropped (a goodbye nobody
 * waited for, or a close the peer sent before it had the request) or
 * failed; dw_on_state() (states.bpf.h) decides which of these applies.
 *
 * Needs, included before it: core/call.bpf.h, core/cascade.bpf.h (a goodbye: the seam's
 * layers_bye(), layers/conn.bpf.h).
 */
#ifndef DEPWATCH_CLOSING_BPF_H
#define DEPWATCH_CLOSING_BPF_H

/*
 * The peer closed (FIN, or a reset: reset) while a call was outstanding.
 * Data and FIN can come in one segment, and the kernel processes the FIN
 * before it wakes the reader: bytes not yet read (beyond the FIN's own
 * sequence number) that answer the call are its response. A close the peer
 * sent before it had the request (it does not acknowledge its first byte)
 * is no failure of the request: the peer was closing already (two TLS
 * goodbyes that cross, the reset a closed peer answers a goodbye with, a
 * keep-alive connection the server closed as the request went out, which
 * clients retry): dropped. So is a close under a multiplexed connection's
 * burst (maybe a control frame, see call_answered()), and so is the close
 * that answers a protocol's goodbye (goodbye.h: MySQL's COM_QUIT,
 * memcached's quit). Any other FIN that had the request and brings no
 * answer is a failure, even one that answers a goodbye read nowhere
 * (HTTP/2's GOAWAY): on the wire the two are the same. Its reason is
 * named (failed_closed): the caller's own close is another (abandoned).
 */
static __always_inline void peer_closed(const struct sock *sk, struct dw_conn *conn, int reset)
{
	__u64 now = bpf_ktime_get_ns();
	int had_request = answers_call(sk, conn, DW_SK_PROBED);

	if (!reset && had_request && answer_came(sk, conn))
		call_complete(conn, now);
	else if (conn->multiplexed || !had_request || layers_bye(conn))
		call_end(conn, OUTCOME_DROPPED, now);
	else
		call_fail_closed(conn);
}

static __always_inline void conn_closed(struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	if (!conn->established)
		return;
	conn->established = 0;
	st = stats_of(conn);
	if (st)
		st->conns_closed++;
}

/*
 * The caller closed the connection under its outstanding call: close()
 * (FIN, with the receive side shut too: shutdown(SHUT_WR) alone still waits
 * for the answer, and the call goes on), or an abort (a reset it sent:
 * state CLOSE with no error, where one the peer sent or a timeout leaves
 * sk_err set).
 */
static __always_inline int caller_closed(const struct sock *sk, int oldstate, int newstate)
{
	if (newstate == TCP_FIN_WAIT1)
		return BPF_CORE_READ(sk, sk_shutdown) & RCV_SHUTDOWN;
	return newstate == TCP_CLOSE && oldstate == TCP_ESTABLISHED && !BPF_CORE_READ(sk, sk_err);
}

/*
 * The caller closed under its outstanding call: an answer that had arrived
 * unread completes it (the syscalls backend completes at the receive), a
 * goodbye is dropped, anything else it gave up on.
 */
static __always_inline void outbound_caller_closed(const struct sock *sk, struct dw_conn *conn)
{
	__u64 now = bpf_ktime_get_ns();

	if (unread_of(sk, DW_SK_PROBED) && answers_call(sk, conn, DW_SK_PROBED)) {
		call_complete(conn, now);
		return;
	}
	/* read, and no data_ready said it came (call.bpf.h) */
	if (answer_unseen(sk, conn, DW_SK_PROBED)) {
		answer_unseen_end(sk, conn, DW_SK_PROBED);
		return;
	}
	/* maybe a control frame (see call_answered()), or a protocol's goodbye (goodbye.h) */
	if (conn->multiplexed || layers_bye(conn)) {
		call_end(conn, OUTCOME_DROPPED, now);
		return;
	}
	if (call_drop_goodbye(conn, now))
		return;
	call_abandon(conn);
	call_fail(conn);
}

/*
 * An inbound connection's state moved with a request outstanding. The
 * client's FIN or reset right behind its request marks a goodbye (TLS
 * close_notify then close()), and so does the server's own close within
 * DW_GOODBYE_NS of the request with its bytes unread (two goodbyes that
 * cross): if it is never answered it is dropped, not failed, as is a
 * request that is a protocol's goodbye (layers_bye(), goodbye.h: the server
 * closes in answer to COM_QUIT or quit). A client that only shut down its
 * sending side still waits for the answer.
 */
static __always_inline void inbound_state(const struct sock *sk, struct dw_conn *conn, int oldstate,
					  int newstate)
{
	int client_left = newstate == TCP_CLOSE_WAIT ||
			  (newstate == TCP_CLOSE && oldstate == TCP_ESTABLISHED && BPF_CORE_READ(sk, sk_err));
	__u64 now = bpf_ktime_get_ns();

	if (client_left && now - conn->call_start_ns <= DW_GOODBYE_NS)
		conn->goodbye = 1;
	/* the server closing as it came, without having read it: it never saw the request */
	if (!client_left && now - conn->call_start_ns <= DW_GOODBYE_NS && unread_of(sk, DW_SK_PROBED))
		conn->goodbye = 1;
	if (newstate == TCP_CLOSE_WAIT)
		return;
	/* a goodbye nobody waited for, or one the protocol answers by closing (goodbye.h) */
	if (conn->goodbye || layers_bye(conn))
		call_end(conn, OUTCOME_DROPPED, now);
	else
		call_fail_closed(conn);
}

#endif /* DEPWATCH_CLOSING_BPF_H */
