/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model's TCP events (core/tcp.bpf.c's, which both backends
 * load): a state change (a connect begins or ends, a listener's child is
 * accepted, the peer's FIN, a close or a reset: core/closing.bpf.h says
 * what each does to the outstanding call) and a retransmit. The events of
 * a call's bytes (a send, data's arrival, a receive) are
 * core/callmodel.bpf.h's, which also states the model's invariants.
 *
 * Needs, included before it: core/closing.bpf.h, core/connect.bpf.h, and the seam's
 * declarations of the layers' ends it calls: layers/state.bpf.h (defined in layers/state.bpf.c,
 * linked in: no layer's header is needed).
 */
#ifndef DEPWATCH_STATES_BPF_H
#define DEPWATCH_STATES_BPF_H

/*
 * A connect that carried its request in the SYN (TCP Fast Open): no send
 * of it began after the connect, so its call starts with the connect
 * (conn->last_ns). Any data after the SYN-ACK acknowledges snd_una - 1.
 */
static __always_inline void syn_data_call(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct dw_conn *conn;

	if (!BPF_CORE_READ_BITFIELD_PROBED(tp, syn_data))
		return;
	conn = conn_of(sk);
	/* the SYN-ACK may be processed in softirq: no current thread to attribute it to */
	if (conn && conn->role == DW_ROLE_OUTBOUND && !conn->call_start_ns) {
		conn->rcv_seq = BPF_CORE_READ(tp, rcv_nxt);
		note_sender(conn, 0);
		call_begin(conn, conn->last_ns, BPF_CORE_READ(tp, snd_una) - 1, 0);
	}
}

/* A listener's child completed its handshake: an inbound connection. */
static __always_inline void dw_on_accepted(const struct sock *sk)
{
	struct dw_conn *conn = conn_adopt(sk, DW_ROLE_INBOUND);
	struct dw_dest_stats *st;

	if (!conn)
		return;
	conn->established = 1;
	st = stats_of(conn);
	if (st)
		st->conns_opened++;
}

/* A state change: connects, accepts, and what a close does to the outstanding call. */
static __always_inline void state_change(const struct sock *sk, int oldstate, int newstate)
{
	struct dw_conn *conn;

	if (newstate == TCP_SYN_SENT) {
		dw_on_connect_start(sk);
		return;
	}
	if (oldstate == TCP_SYN_SENT) {
		dw_on_connect_end(sk, newstate == TCP_ESTABLISHED);
		if (newstate == TCP_ESTABLISHED)
			syn_data_call(sk);
		return;
	}
	if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		dw_on_accepted(sk);
		return;
	}
	if (newstate != TCP_CLOSE_WAIT && newstate != TCP_CLOSE && newstate != TCP_FIN_WAIT1 &&
	    newstate != TCP_LAST_ACK)
		return;
	conn = conn_of(sk);
	if (!conn)
		return;
	/* before looking for a call: see outbound_start() */
	if (newstate == TCP_CLOSE || (newstate == TCP_CLOSE_WAIT && conn->role == DW_ROLE_OUTBOUND))
		__sync_lock_test_and_set(&conn->closed, 1);
	if (newstate == TCP_CLOSE)
		conn_closed(conn);
	/* each layer's own end first: a TLS session's, an owed answer, HTTP/2's open streams */
	layers_state(sk, conn, oldstate, newstate);
	if (!conn->call_start_ns)
		return;
	if (conn->role == DW_ROLE_INBOUND) {
		inbound_state(sk, conn, oldstate, newstate);
		return;
	}
	if (newstate == TCP_CLOSE_WAIT) {
		peer_closed(sk, conn, 0);
		return;
	}
	if (newstate == TCP_CLOSE && BPF_CORE_READ(sk, sk_err) == ECONNRESET) {
		peer_closed(sk, conn, 1);
		return;
	}
	if (caller_closed(sk, oldstate, newstate)) {
		outbound_caller_closed(sk, conn);
		return;
	}
	/* shutdown(SHUT_WR): the answer may still come; else the connection died under it (a timeout, an abort) */
	if (newstate != TCP_FIN_WAIT1)
		call_fail_closed(conn);
}

/*
 * At TCP_CLOSE, which every TCP socket passes before it is freed: the
 * pending entry goes back, the layers let go of what they count
 * (layers_forget()); socket storage stays with the socket, the syscalls
 * backend's entry goes.
 */
static __always_inline void conn_forget(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct dw_conn *conn = conn_of(sk);

	if (conn) {
		pend_give_back(conn);
		layers_forget(conn);
	}
	if (dw_backend == DW_BACKEND_SYSCALLS)
		bpf_map_delete_elem(&conns_sk, &key);
}

/*
 * The TCP state moved (inet_sock_set_state): the call model's state change,
 * then, at TCP_CLOSE, which every TCP socket passes before it is freed, the
 * connection's state let go.
 */
static __always_inline void dw_on_state(const struct sock *sk, int oldstate, int newstate)
{
	state_change(sk, oldstate, newstate);
	if (newstate == TCP_CLOSE)
		conn_forget(sk);
}

static __always_inline void dw_on_retransmit(const struct sock *sk)
{
	struct dw_conn *conn = conn_of(sk);
	struct dw_dest_stats *st;

	if (!conn || conn->role != DW_ROLE_OUTBOUND)
		return;
	st = stats_of(conn);
	if (st)
		st->retransmits++;
}

#endif /* DEPWATCH_STATES_BPF_H */
