/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam between the transport call model (core/) and the layers above
 * TCP, for the events of a call's bytes: a send begins or returns, data
 * reaches the socket, a receive returns, a read ends, a copy to the reader
 * (core/callmodel.bpf.h's dw_on_*()). The layers: HTTP/2's streams (h2/),
 * TLS sessions and TLS's record-level model (tls/), the answers' outcomes
 * and protocols' goodbyes (answer/). The transport calls them only through
 * the layers_*() entries here, one for each moment of an event where a
 * layer has its say; each calls the layers in the order written here,
 * the one place it is written. An entry that returns true took the event:
 * a layer owns the connection's calls (an h2c connection's streams, a TLS
 * session's plaintext) and the transport leaves it alone.
 *
 * The orders (today's; behaviour is the model's, doc/callmodel.md):
 * - a send, data's arrival, a receive: who takes it, HTTP/2 first (an h2c
 *   connection's events are its streams', nothing else's), then TLS (a
 *   tied session's connection is its plaintext's); on a connection neither
 *   took, the answers and TLS's record-level model where the transport
 *   reaches them (an owed answer settled before a request, a goodbye's
 *   bytes where a call starts, a burst's next start behind a call);
 * - a read's end: HTTP/2's walk, then an owed answer's status line, then
 *   an inbound request's goodbye (the last two never on an h2c
 *   connection: each checks the connection's state itself);
 * - a copy to the reader: the answers first, which tell an HTTP/1
 *   connection's copy (one with an answer owed), and only otherwise
 *   HTTP/2's walk.
 * A TCP state change, TCP_CLOSE and a call's end are layers/state.bpf.h's;
 * the syscalls backend's entry and exit, layers/sys.bpf.h's.
 *
 * Needs, included before it: h2/streams.bpf.h, answer/goodbye.bpf.h,
 * tls/tlslink.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_BYTES_BPF_H
#define DEPWATCH_LAYERS_BYTES_BPF_H

/* A send begins (sock backend, tcp_sendmsg_locked): its bytes (msg) to HTTP/2's walker, then TLS's tie. */
static __always_inline bool layers_send_begin(const struct sock *sk, struct dw_conn *conn,
					      const struct msghdr *msg)
{
	return h2_on_send_msg(sk, conn, msg) || tls_owned(sk, conn, true);
}

/* A send returned (the syscalls backend's exit; sock_send_length where there is no tcp_sendmsg_locked). */
static __always_inline bool layers_send(const struct sock *sk, struct dw_conn *conn)
{
	return h2_took(conn) || tls_owned(sk, conn, true);
}

/* An inbound connection's answer begins (sock backend): its status, before the request completes. */
static __always_inline void layers_answer_sent(struct dw_conn *conn, const struct msghdr *msg)
{
	answer_inbound_msg(conn, msg);
}

/* An outbound connection's send begins (sock backend): a call whose answer is owed and was never read ends. */
static __always_inline void layers_request_sent(struct dw_conn *conn)
{
	dw_answer_settle_unread(conn);
}

/* A send behind the outstanding call (began_ns, 0: now): TLS's record-level bursts; true if it was TLS's. */
static __always_inline bool layers_send_behind(struct dw_conn *conn, __u64 began_ns, __u32 len)
{
	return tls_send_behind(conn, began_ns, len);
}

/* A send of len bytes that nothing answers (a multiplexed TLS connection's control frame): no call. */
static __always_inline bool layers_unanswered(const struct dw_conn *conn, __u32 len)
{
	return tls_unanswered(conn, len);
}

/* An outbound call starts at this send (sock backend): whether its first bytes are a protocol's goodbye. */
static __always_inline bool layers_call_bytes(const struct dw_conn *conn, const struct msghdr *msg)
{
	return goodbye_msg(conn, msg);
}

/* A call is claimed, bye: a protocol's goodbye (an inbound request's is read later: false). */
static __always_inline void layers_call_begins(struct dw_conn *conn, bool bye)
{
	goodbye_mark(conn, bye);
}

/*
 * Bytes reached the socket (sock backend, sk_data_ready): an h2c
 * connection's are its streams'; a first read still to be looked at is
 * noted; a tied TLS session's connection is its plaintext's.
 */
static __always_inline bool layers_data(const struct sock *sk, struct dw_conn *conn)
{
	if (h2_took(conn))
		return true;
	h2_rx_pending(conn);
	return tls_owned(sk, conn, false);
}

/* The bytes of this arrival alone, on a TLS connection (DW_TLS_SMALL's measure); 0 otherwise. */
static __always_inline __u32 layers_data_len(const struct sock *sk, struct dw_conn *conn)
{
	return tls_rx_len(sk, conn);
}

/*
 * The outstanding call's answer reached the socket at at (sock backend):
 * it completes now, or, where its status line is read, at the reader's
 * copy (answer.bpf.h); a multiplexed TLS connection's next burst starts.
 */
static __always_inline void layers_answered(const struct sock *sk, struct dw_conn *conn, __u64 at)
{
	answer_came_at(sk, conn, at);
	tls_next_burst(conn);
}

/* Whether a receive of ret bytes is a layer's even where the transport has nothing to learn. */
static __always_inline bool layers_recv_wants(int ret)
{
	return tls_recv_wants(ret);
}

/*
 * A receive returned ret: an h2c connection's are its streams'; cand (layers_recv_wants()): a
 * TLS connection's bytes read outside an SSL call may make the thread's candidate.
 */
static __always_inline bool layers_recv(const struct sock *sk, struct dw_conn *conn, int ret, int flags,
					bool cand)
{
	if (h2_took(conn))
		return true;
	if (cand)
		tls_rx_candidate(sk, conn, ret, flags);
	return false;
}

/* A tied TLS session owns the connection's calls: the record-level events leave it. */
static __always_inline bool layers_owned(const struct sock *sk, struct dw_conn *conn)
{
	return tls_owned(sk, conn, false);
}

/* A receive completed the outstanding call: a multiplexed TLS connection's next burst starts. */
static __always_inline void layers_completed(struct dw_conn *conn)
{
	tls_next_burst(conn);
}

/*
 * A read ended (sock backend, sock_recv_length; x86-64, where its buffers
 * are found): HTTP/2's walk of an h2c connection's bytes, an owed answer's
 * status line, an inbound request's goodbye.
 */
static __always_inline void layers_read(const struct sock *sk, int ret, int flags)
{
	h2_on_read(sk, ret, flags);
	answer_on_read(sk, ret, flags);
	goodbye_on_read(sk, ret, flags);
}

/*
 * A copy to the reader (sock backend, skb_copy_datagram_iovec): an owed
 * answer's status line; a connection that owes one is HTTP/1, none of the
 * stream layer's, which walks the others' bytes.
 */
static __always_inline void layers_copy(const struct sk_buff *skb, int len)
{
	if (!answer_on_copy(skb, len))
		h2_on_copy(skb, len);
}

#endif /* DEPWATCH_LAYERS_BYTES_BPF_H */
