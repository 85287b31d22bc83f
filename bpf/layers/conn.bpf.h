/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam's questions of a connection's layers: what the transport call
 * model (core/) asks of the layers above TCP where it decides how a call
 * ends or whether data answers it. The transport never reads a layer's
 * room in struct dw_conn itself (its h2, answer and tls sub-structs); it
 * asks here, and each answer is the layer's own, read by the pure
 * accessor in its connstate.h. Apart from the seam's events
 * (layers/bytes.bpf.h, state.bpf.h, callend.bpf.h), which come after the
 * transport's headers, because the transport's own headers
 * (core/call.bpf.h, closing.bpf.h, and slots.bpf.h's adoption) use these:
 * a program includes this right after the connection (core/conn.bpf.h).
 * Questions, and a new connection's reset; nothing here calls a layer's
 * code, so every program that adopts connections (enforcement and DNS
 * too) includes it without the layers.
 *
 * Needs, included before it: core/conn.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_CONN_BPF_H
#define DEPWATCH_LAYERS_CONN_BPF_H

/*
 * The outstanding call was answered and its outcome is owed to the
 * reader's copy (sock backend, answer/answer.bpf.h): nothing but the
 * answers ends it, and it is not answered again.
 */
static __always_inline bool layers_answer_owed(const struct dw_conn *conn)
{
	return dw_answer_owed(&conn->answer);
}

/* The outstanding call is a protocol's goodbye (answer/goodbye.h): a close that ends it drops it. */
static __always_inline bool layers_bye(const struct dw_conn *conn)
{
	return dw_answer_bye(&conn->answer);
}

/*
 * The connection carries TLS (its first bytes a hello): its bytes are
 * records, and TLS's record-level model (tls/tlslink.bpf.h) times its
 * bursts; an answer no data_ready saw is not guessed from them.
 */
static __always_inline bool layers_tls(const struct dw_conn *conn)
{
	return dw_tls_hello(&conn->tls);
}

/*
 * Data of len bytes on a multiplexed connection is a layer's control
 * frame, no answer (TLS: DW_TLS_SMALL, a PING ACK): it ends no burst, so
 * a hang behind PINGs stays visible.
 */
static __always_inline bool layers_control_frame(const struct dw_conn *conn, __u32 len)
{
	return dw_tls_control(&conn->tls, len);
}

/*
 * A new connection on this socket (adoption, core/slots.bpf.h): each
 * layer's state afresh, one assignment each. A socket counted in
 * dw_tls_live leaves the count first (TCP_CLOSE does that too,
 * layers_forget()). The two globals are core/maps.bpf.h's (every program
 * that adopts has them).
 */
static __always_inline void layers_conn_begins(struct dw_conn *conn)
{
	conn->answer = (struct dw_conn_answer){};
	conn->h2 = dw_conn_h2_fresh(dw_h2_enabled);
	if (conn->tls.live)
		__sync_fetch_and_add(&dw_tls_live, -1);
	conn->tls = (struct dw_conn_tls){};
}

/*
 * A connection open before the start, adopted (core/classify.bpf.c) after
 * layers_conn_begins(): its first bytes went by, so the stream layer never
 * walks it as HTTP/2 (the other layers read no first bytes of it either).
 */
static __always_inline void layers_adopted_open(struct dw_conn *conn)
{
	conn->h2 = dw_conn_h2_fresh(false);
}

#endif /* DEPWATCH_LAYERS_CONN_BPF_H */
