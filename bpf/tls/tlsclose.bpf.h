/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A TLS session's end (issue 32): its HTTP/2 state swept and freed, its
 * outstanding call ended and its link dropped, at SSL_free (tls/ssl.bpf.c)
 * or at its socket's TCP state change (tls_on_state(), from the call
 * model's state event). Apart from the walk of its plaintext
 * (tls/tlsh2.bpf.h), so that the TCP state program reaches a session's
 * end without the frame walker.
 *
 * Needs, included before it: core (conn, call), h2/h2stream.bpf.h (the
 * sweep), tls/maps.bpf.h, tls/tlslink.bpf.h.
 */
#ifndef DEPWATCH_TLSCLOSE_BPF_H
#define DEPWATCH_TLSCLOSE_BPF_H

/* The session's stream state goes: its link went, or the walker lost step. */
static __always_inline void tls_h2_free(struct dw_conn *l, struct dw_tls_key *key, __u8 state)
{
	if (l->h2.state == DW_H2_MAYBE || l->h2.state == DW_H2_ON)
		bpf_map_delete_elem(&tls_h2, key);
	l->h2.state = state;
}

/* The link goes: nothing answers its open streams any more. */
static __always_inline void tls_h2_end(struct dw_conn *l, struct dw_tls_key *key)
{
	struct dw_h2_conn *h2;

	if (l->h2.state != DW_H2_MAYBE && l->h2.state != DW_H2_ON)
		return;
	h2 = bpf_map_lookup_elem(&tls_h2, key);
	if (h2)
		h2_sweep_failed(l, h2, bpf_ktime_get_ns());
	tls_h2_free(l, key, DW_H2_NEVER);
}

/*
 * The session's outstanding call ends with its link: the session or its socket is gone.
 * outcome: OUTCOME_CLOSED where the connection ended under it (failed_closed), else
 * OUTCOME_FAILED (the program freed its session, or closed the socket itself, under its call).
 */
static __always_inline void tls_unlink(struct dw_conn *l, struct dw_tls_key *key, enum call_outcome outcome)
{
	__sync_lock_test_and_set(&l->closed, 1);
	tls_h2_end(l, key);
	if (l->call_start_ns)
		call_end(l, outcome, bpf_ktime_get_ns());
	bpf_map_delete_elem(&tls_links, key);
}

/*
 * Whether a TLS connection reaching TCP_CLOSE ended under its calls rather than by its own
 * program's close: inbound always (as on cleartext, inbound_state()); outbound, once the peer's
 * FIN came first (CLOSE_WAIT, LAST_ACK) or an error ended it (a reset, a timeout).
 */
static __always_inline bool tls_conn_ended(const struct sock *sk, const struct dw_conn *conn, int oldstate)
{
	return conn->role == DW_ROLE_INBOUND || oldstate == TCP_CLOSE_WAIT || oldstate == TCP_LAST_ACK ||
	       BPF_CORE_READ(sk, sk_err);
}

/*
 * The TCP state of a connection a session owns moved. Outbound, the peer's
 * FIN admits no call begun after it (the link's tls.next_ns is its time: a
 * write that began before it is looked at when it returns, maybe after);
 * the outstanding one may still be answered by bytes that came before the
 * FIN and are not read yet (SSL_read ends it).
 * At TCP_CLOSE nothing more can answer: it fails (named failed_closed where
 * the connection ended under it, tls_conn_ended()), and the link goes.
 */
static __always_inline void tls_on_state(const struct sock *sk, struct dw_conn *conn, int oldstate,
					 int newstate)
{
	struct dw_tls_key key = { .ssl = conn->tls.ssl, .tgid = conn->tls.tgid };
	struct dw_conn *l;

	if (newstate == TCP_CLOSE)
		tls_owner_forget(sk, conn);
	if (!dw_tls_on || conn->tls.own != DW_TLS_OWNED)
		return;
	if (newstate != TCP_CLOSE && !(newstate == TCP_CLOSE_WAIT && conn->role == DW_ROLE_OUTBOUND))
		return;
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (!l || l->tls.sk != (__u64)(unsigned long)sk)
		return;
	if (newstate == TCP_CLOSE)
		tls_unlink(l, &key, tls_conn_ended(sk, conn, oldstate) ? OUTCOME_CLOSED : OUTCOME_FAILED);
	else if (!l->tls.next_ns)
		l->tls.next_ns = bpf_ktime_get_ns();
}

#endif /* DEPWATCH_TLSCLOSE_BPF_H */
