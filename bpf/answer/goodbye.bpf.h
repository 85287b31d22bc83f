/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a request's first bytes are read for a goodbye (goodbye.h, issue
 * 50): where an outbound call starts, and only there, beside the stream
 * layer's and the answers' readers (answer.bpf.h), from the same places:
 * - sock backend: the msghdr at tcp_sendmsg_locked (answer_msg_bytes()),
 *   when no call is outstanding and the send is as long as a goodbye;
 * - syscalls backend: the send's user buffer (or its first iovec) at the
 *   system call's entry, when no call is outstanding; the exit compares
 *   the goodbye's length with what the send took.
 * And inbound, the mirror: an inbound request (started when its bytes
 * reached the socket) whose first read takes it whole, as long as a
 * goodbye, has its bytes looked at in the reader's buffer when the read
 * ends (sock backend: sock_recv_length, x86-64 only, as the stream layer
 * reads there; syscalls backend: the receive's exit), so the server's
 * close that answers it drops the request instead of failing it
 * (closing.bpf.h). The request's bytes are not read where it starts: on
 * loopback and with GRO they are in page fragments of the skb.
 * At most DW_GOODBYE_PEEK bytes of the first buffer: one or two probe
 * reads per call start on connections that are neither TLS nor HTTP/2,
 * and none for a send or read of any other length where the length is
 * known.
 *
 * Needs, included before it: answer/answer.bpf.h.
 */
#ifndef DEPWATCH_GOODBYE_BPF_H
#define DEPWATCH_GOODBYE_BPF_H

#include "answer/goodbye.h"

/*
 * The length of the goodbye the first buffer of b starts (a user buffer,
 * or the first iovec of an array in user or kernel memory), 0 if none.
 * Global, verified once: the hooks that call it pay a call, not its walk.
 */
/* The first bytes (at most DW_GOODBYE_PEEK) of b's first buffer into p: how many, 0 if none. */
static __always_inline __u32 goodbye_bytes(const struct h2_bytes *b, __u8 *p)
{
	struct iovec v;
	__u64 at;
	__u32 n;
	long err;

	at = b->addr + b->off;
	n = b->len;
	if (b->kind == H2_SRC_IOV_USER || b->kind == H2_SRC_IOV_KERNEL) {
		err = !b->nseg ? -1 :
		      b->kind == H2_SRC_IOV_KERNEL ?
			      bpf_probe_read_kernel(&v, sizeof(v), (const void *)b->addr) :
			      bpf_probe_read_user(&v, sizeof(v), (const void *)b->addr);
		if (err || v.iov_len <= b->off)
			return 0;
		at = (__u64)(unsigned long)v.iov_base + b->off;
		if (v.iov_len - b->off < n)
			n = v.iov_len - b->off;
	}
	if (n > DW_GOODBYE_PEEK)
		n = DW_GOODBYE_PEEK;
	barrier_var(n);
	if (n < 1 || n > DW_GOODBYE_PEEK || bpf_probe_read_user(p, n, (const void *)at))
		return 0;
	return n;
}

__weak __noinline int dw_goodbye_read(struct h2_bytes *b)
{
	__u8 p[DW_GOODBYE_PEEK] = {};

	if (!b)
		return 0;
	return dw_goodbye_len(p, goodbye_bytes(b, p));
}

/* A call starts: bye, its bytes are a protocol's goodbye (a close that ends it drops it). */
static __always_inline void goodbye_mark(struct dw_conn *conn, bool bye)
{
	conn->answer.bye = bye;
}

/* Whether the connection's next call may be a goodbye: outbound, cleartext, no HTTP/2, none outstanding. */
static __always_inline bool goodbye_wanted(const struct dw_conn *conn)
{
	return conn->role == DW_ROLE_OUTBOUND && !conn->call_start_ns && !conn->tls.hello &&
	       (conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_NEVER);
}

/* A send beginning at tcp_sendmsg_locked (sock backend) with no call outstanding: whether it is a goodbye. */
static __always_inline bool goodbye_msg(const struct dw_conn *conn, const struct msghdr *msg)
{
	struct h2_bytes b = {};

	if (!msg || !goodbye_wanted(conn) || !dw_goodbye_size(msg->msg_iter.count))
		return false;
	if (!answer_msg_bytes(msg, &b))
		return false;
	return dw_goodbye_read(&b) == (int)b.len;
}

/* Whether an inbound connection's outstanding request may be a goodbye: cleartext, no HTTP/2. */
static __always_inline bool goodbye_inbound(const struct dw_conn *conn)
{
	return conn->role == DW_ROLE_INBOUND && conn->call_start_ns && !conn->tls.hello &&
	       (conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_NEVER);
}

/*
 * Set once a connection read a MySQL header of COM_QUIT's (DW_BYE_HEAD): until then no 1-byte read
 * is looked at (only the body after such a header is one), so a host without MySQL clients pays
 * nothing for it (a 1-byte ping-pong's reads paid 80 ns each: 171 -> 91 ns per dw_recv).
 */
__u32 dw_bye_heads __weak;

/*
 * An inbound request's read, ret bytes in the reader's buffer b: its
 * first read, all of it (a goodbye's length) or a MySQL packet's header
 * (DW_GOODBYE_HEAD, one byte left), or the body after such a header:
 * conn->answer.bye says whether it is a goodbye (enum dw_bye). Global, verified
 * once.
 */
__weak __noinline int dw_goodbye_request(struct dw_conn *conn, struct h2_bytes *b, int ret)
{
	__u8 p[DW_GOODBYE_PEEK] = {};
	__u32 n;

	if (!conn || !b)
		return 0;
	n = goodbye_bytes(b, p);
	if (ret == DW_GOODBYE_HEAD) {
		conn->answer.bye = dw_goodbye_head(p, n) ? DW_BYE_HEAD : DW_BYE_NO;
		if (conn->answer.bye == DW_BYE_HEAD && !*(volatile __u32 *)&dw_bye_heads)
			dw_bye_heads = 1;
	}
	else if (ret == 1)
		conn->answer.bye = conn->answer.bye == DW_BYE_HEAD && dw_goodbye_body(p, n) ? DW_BYE_YES : DW_BYE_NO;
	else
		conn->answer.bye = dw_goodbye_len(p, n) == (__u32)ret ? DW_BYE_YES : DW_BYE_NO;
	return 0;
}

/*
 * Whether a read of ret bytes from first (its first byte's sequence
 * number), leaving left unread, is one dw_goodbye_request() looks at, on
 * an inbound connection whose request began at conn->req_seq.
 */
static __always_inline bool goodbye_read_wanted(const struct dw_conn *conn, int ret, __u32 first, __u32 left)
{
	if (ret == 1)
		return conn->answer.bye == DW_BYE_HEAD && first == conn->req_seq + DW_GOODBYE_HEAD && !left;
	if (ret == DW_GOODBYE_HEAD)
		return first == conn->req_seq && left == 1;
	return dw_goodbye_size(ret) && first == conn->req_seq && !left;
}

/*
 * syscalls backend, a system call's entry: the goodbye its bytes may be looked at for, 0 if none:
 * a send that would start a call (1: read at the entry); a receive that would start an inbound
 * request (1) or read the body after a MySQL header (2), read at the exit (layers_sys_read()).
 */
static __always_inline __u8 goodbye_sys_wanted(const struct dw_conn *conn, __u32 op)
{
	if (op == DW_SYS_SEND)
		return goodbye_wanted(conn);
	if (conn->role == DW_ROLE_INBOUND && !conn->tls.hello &&
	    (conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_NEVER))
		return !conn->call_start_ns ? 1 : conn->answer.bye == DW_BYE_HEAD ? 2 : 0;
	return 0;
}

/* The read lengths goodbye_read_wanted() may want: a goodbye's, a MySQL header's, its body's. */
static __always_inline bool goodbye_read_size(int ret)
{
	if (ret == 1)
		return *(volatile __u32 *)&dw_bye_heads;
	return ret == DW_GOODBYE_HEAD || (ret > 0 && dw_goodbye_size(ret));
}

/*
 * A read ended (sock backend, sock_recv_length; x86-64, where the read's
 * buffer is found: readend.bpf.h): if it took an inbound request whole,
 * from its first byte (conn->req_seq, noted at its start) to the last byte
 * there is, and is as long as a goodbye, or is a MySQL packet's header or
 * the body after it (goodbye_read_wanted()), its bytes are looked at.
 */
static __always_inline void goodbye_on_read(const struct sock *sk, int ret, int flags)
{
	struct h2_bytes b = {};
	struct dw_conn *conn;

	if (!dw_h2_at_read || (flags & MSG_PEEK) || !goodbye_read_size(ret))
		return;
	conn = conn_of(sk);
	if (!conn || !goodbye_inbound(conn))
		return;
	if (!goodbye_read_wanted(conn, ret, read_end_seq(sk, ret), unread_of(sk, DW_SK_BTF)) ||
	    !read_end_bytes(&b, ret))
		return;
	dw_goodbye_request(conn, &b, ret);
}

#endif /* DEPWATCH_GOODBYE_BPF_H */
