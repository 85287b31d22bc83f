/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seam between the transport call model and the layers above TCP, for
 * the "syscalls" backend's own events (core/sysmodel.bpf.h): what the
 * layers want of a system call on a tracked socket at its entry (its bytes
 * at the exit: HTTP/2's first bytes or an h2c connection's frames, an
 * answer's status line; a goodbye's), and what they read of its buffer at
 * the exit, around the call model's event. The events both backends share
 * are layers/bytes.bpf.h's. At the exit HTTP/2 comes first (an h2c
 * connection's bytes are its streams': the exit ends there), then the
 * answers, an answer's status before the call model's event and an
 * inbound request's goodbye after it; at the entry nothing is taken, and
 * each layer only says what it wants (TLS's candidate noted first).
 *
 * Needs, included before it: layers/bytes.bpf.h.
 */
#ifndef DEPWATCH_LAYERS_SYS_BPF_H
#define DEPWATCH_LAYERS_SYS_BPF_H

/*
 * A system call's entry on a tracked connection: a memory-BIO TLS
 * library's ciphertext read may make the thread's candidate (tls_sys_rx);
 * *bye, the goodbye its bytes may be (a send that would start a call, a
 * receive that would start an inbound request (1) or read the body after a
 * MySQL header (2)); *bytes, whether a layer wants its bytes at the exit.
 */
static __always_inline void layers_sys_enter(const struct sock *sk, struct dw_conn *conn, __u32 op,
					     bool *bytes, __u8 *bye)
{
	if (op == DW_SYS_RECV)
		tls_sys_rx_note(sk, conn);
	*bye = goodbye_sys_wanted(conn, op);
	*bytes = h2_sys_wanted(conn, op) || answer_sys_wanted(conn, op);
}

/* Whether a send of len bytes can be a goodbye (answer/goodbye.h): none of another length is read. */
static __always_inline bool layers_sys_bye_size(__u64 len)
{
	return dw_goodbye_size(len);
}

/* How many of a send's first bytes a goodbye's reader looks at, where the send's length is not known. */
static __always_inline __u32 layers_sys_bye_peek(void)
{
	return DW_GOODBYE_PEEK;
}

/* A send that would start a call: the length of the goodbye its first bytes start, 0 if none. */
static __always_inline __u32 layers_sys_bye(struct h2_bytes *b)
{
	return dw_goodbye_read(b);
}

/*
 * The call's bytes to the stream layer, where they were asked for: true if
 * it took the event (an h2c connection's), which the transport model then
 * leaves alone. A peek is not walked: the bytes come again.
 */
static __always_inline bool layers_sys_bytes(const struct dw_sys_call *call, int ret, const __u32 op)
{
	const struct sock *sk = (const struct sock *)(unsigned long)call->sk;
	struct h2_bytes b = { .addr = call->buf, .nseg = call->nseg, .len = ret, .seq = call->seq,
			      .kind = call->nseg ? H2_SRC_IOV_USER : H2_SRC_USER };
	bool send = op == DW_SYS_SEND;
	struct dw_conn *conn;

	if (!call->bytes || ret <= 0 || (!send && (call->flags & MSG_PEEK)))
		return false;
	conn = conn_of(sk);
	if (!conn)
		return false;
	return h2_on_bytes(sk, conn, send ? H2_TX : H2_RX, &b, 0,
			   send && call->enter_ns ? call->enter_ns : bpf_ktime_get_ns(), false);
}

/*
 * An answer's status, from the call's buffer, before the call model
 * completes the call with it (answer.bpf.h): an outbound receive that
 * begins where the answer does, an inbound service's send. Global, and
 * called on every exit without a test: verified once, and no branch that
 * would double the verifier's walk of the exit's call model after it.
 */
__noinline int layers_sys_answer(const struct dw_sys_call *call, int ret, __u32 op)
{
	const struct sock *sk;
	struct h2_bytes b = {};
	struct dw_conn *conn;

	if (!call || !call->bytes || ret <= 0 || !op || call->op != op)
		return 0;
	sk = (const struct sock *)(unsigned long)call->sk;
	conn = conn_of(sk);
	if (!conn || !answer_sys_wanted(conn, op))
		return 0;
	if (op == DW_SYS_RECV && ((call->flags & MSG_PEEK) || call->seq != conn->rcv_seq))
		return 0;
	b.addr = call->buf;
	b.nseg = call->nseg;
	b.len = ret;
	b.kind = call->nseg ? H2_SRC_IOV_USER : H2_SRC_USER;
	answer_read_user(conn, &b);
	return 0;
}

/*
 * After the call model: a receive that started an inbound request (the
 * entry saw none outstanding: call->bye_len 1) or reads the body after a
 * MySQL header (2), and that goodbye_read_wanted() looks at: its bytes in
 * the buffer say whether it is a goodbye (goodbye.bpf.h). Global, as above.
 */
__noinline int layers_sys_read(const struct dw_sys_call *call, int ret)
{
	const struct sock *sk;
	struct h2_bytes b = {};
	struct dw_conn *conn;

	if (!call || call->op != DW_SYS_RECV || !call->bye_len || (call->flags & MSG_PEEK) ||
	    !goodbye_read_size(ret))
		return 0;
	sk = (const struct sock *)(unsigned long)call->sk;
	conn = conn_of(sk);
	if (!conn || !goodbye_inbound(conn))
		return 0;
	/* a request this receive began: its first byte is where the receive began (request_begin() took the end) */
	if (call->bye_len == 1)
		conn->req_seq = call->seq;
	if (!goodbye_read_wanted(conn, ret, read_end_seq(sk, ret), unread_of(sk, DW_SK_PROBED)))
		return 0;
	b.addr = call->buf;
	b.nseg = call->nseg;
	b.len = ret;
	b.kind = call->nseg ? H2_SRC_IOV_USER : H2_SRC_USER;
	dw_goodbye_request(conn, &b, ret);
	return 0;
}

/* After the call model: a status its call did not take is not the next call's (global, as above). */
__noinline int layers_sys_done(const struct dw_sys_call *call)
{
	struct dw_conn *conn;

	if (!call || !call->bytes)
		return 0;
	conn = conn_of((const struct sock *)(unsigned long)call->sk);
	if (conn)
		answer_status_drop(conn);
	return 0;
}

#endif /* DEPWATCH_LAYERS_SYS_BPF_H */
