/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam between the transport call model (core/) and the layers above
 * TCP, for a connection's TCP events: what HTTP/2's streams (h2/), TLS
 * sessions (tls/) and the answers (answer/) do when the connection's state
 * moves (core/states.bpf.h) and when it is let go at TCP_CLOSE. The events
 * of a call's bytes are layers/bytes.bpf.h's, a call's end
 * layers/callend.bpf.h's. The transport calls the layers only through these
 * entries; each calls them in the order written here, the one place it is
 * written. Apart from the bytes' half so that the TCP program
 * (core/tcp.bpf.c) includes no frame walker, hello reader or plaintext walk.
 *
 * Needs, included before it: answer/answer.bpf.h, h2/h2stream.bpf.h,
 * tls/tlsclose.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_STATE_BPF_H
#define DEPWATCH_LAYERS_STATE_BPF_H

/*
 * The connection's TCP state moved, before the transport looks at its
 * outstanding call (core/states.bpf.h): a TLS session's end (its link goes
 * at TCP_CLOSE, its calls admit no new one after the peer's FIN); at
 * TCP_CLOSE an answer owed to a read nobody makes any more, settled
 * unread, and a first read never looked at no longer pending; then
 * HTTP/2's open streams, which nothing answers once the server closed.
 * The order is today's: the three touch state of their own (a link's
 * copy, the owed call, the streams), so no one's result depends on
 * another's.
 */
static __always_inline void layers_state(const struct sock *sk, struct dw_conn *conn, int oldstate,
					 int newstate)
{
	tls_on_state(sk, conn, oldstate, newstate);
	if (newstate == TCP_CLOSE) {
		dw_answer_settle_unread(conn);	/* nobody reads an owed answer's status any more */
		h2_forget(conn);
	}
	h2_on_state(sk, conn, newstate);
}

/* At TCP_CLOSE, the connection let go (conn_forget()): TLS's count of live connections. */
static __always_inline void layers_forget(struct dw_conn *conn)
{
	tls_forget(conn);
}

#endif /* DEPWATCH_LAYERS_STATE_BPF_H */
