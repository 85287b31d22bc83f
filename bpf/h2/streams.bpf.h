/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stream layer: on a cleartext HTTP/2 (h2c) connection a call is a
 * stream. gRPC and other HTTP/2 clients put every concurrent call on one
 * connection; the transport model (one outstanding call per connection)
 * would count a fraction of them and time bursts. Here each stream is a
 * call of its own, with its own start, its own pending-table entry (so it
 * is in flight, and counts in the oldest, the slow sample, the stall and
 * the callers as any call does) and its own end.
 *
 * Recognising it. A new connection's first bytes are looked at once per
 * direction: the client's must be the connection preface (RFC 9113 3.4),
 * the server's a SETTINGS frame. Whichever comes first makes the
 * connection's state (struct dw_h2_conn); the whole preface makes it ON.
 * Anything else (most connections, at the cost of one look at their
 * first bytes) is NEVER and keeps the transport model. Connections open
 * before the start are never looked at.
 *
 * Walking it. Every send and every receive of an h2c connection is walked
 * frame by frame (bpf/h2/h2.h) with bpf_loop, a bounded number of steps, from
 * where the direction's walker stands (its TCP sequence number: bytes
 * walked already are skipped, a gap is a desync). Where the bytes are:
 * - sock backend, sends: the msghdr at tcp_sendmsg_locked (user memory,
 *   before the copy; a send the kernel takes only part of is walked whole
 *   and its unsent bytes skipped when they come again). The tracepoint
 *   fires at each pass of the send's copy loop (each skb, each page
 *   fragment it fills), its iterator advanced by the passes before: the
 *   first walks the send, the later ones find their bytes walked already;
 * - sock backend, receives: on x86-64 the read's user buffers at
 *   sock_recv_length (h2_on_read, below); elsewhere the skb at
 *   skb_copy_datagram_iovec (a copy to user space: the bytes the reader
 *   takes, in order, at the read);
 * - syscalls backend: the user buffers of the system call, at its exit.
 * A stream starts at the client's HEADERS on a new odd stream id (when the
 * send began) and ends at the server's first HEADERS or DATA on it
 * (completed, or failed for a 5xx :status the kernel can read), its
 * RST_STREAM (failed), the client's RST_STREAM (failed, cancelled),
 * GOAWAY above its id, or the connection's end (failed).
 *
 * Losing step (a gap, bytes that are not frames, too many frames for one
 * event) ends the connection's open streams as dropped (no outcome known:
 * never invented calls), counts h2_desync and hands the connection back to
 * the transport model, as multiplexed.
 *
 * Here: the stream layer's entry points for an event's bytes, which the
 * call model reaches through the seam (layers/bytes.bpf.h, layers/sys.bpf.h).
 * Beneath, one
 * concept a header in h2/: maps.bpf.h (its maps), h2conn.bpf.h (the
 * connection's state), h2detect.bpf.h (recognising it, TLS hellos),
 * h2stream.bpf.h (streams as calls, and what a TCP state change does to
 * them: h2_on_state()), hblock.bpf.h (header blocks to the daemon),
 * h2walk.bpf.h (walking an event's bytes); the pure parts in h2/h2.h
 * (frames), h2/hblock.h (the header-block record) and tls/hello.h
 * (hellos).
 *
 * Needs, included before it: h2/h2detect.bpf.h, h2/h2walk.bpf.h, core/readend.bpf.h.
 */
#ifndef DEPWATCH_STREAMS_BPF_H
#define DEPWATCH_STREAMS_BPF_H

/*
 * An event's bytes on a connection that is or may be h2c (sends and
 * receives, either backend); true if the stream layer took the event, and
 * the transport model must leave it alone. now: when a send began, or
 * when the receive is.
 */
static __always_inline bool h2_on_bytes(const struct sock *sk, struct dw_conn *conn, enum h2_way way,
					const struct h2_bytes *b, struct bpf_dynptr *skb, __u64 now,
					bool from_skb)
{
	__u8 side = (way == H2_TX) == (conn->role == DW_ROLE_OUTBOUND) ? DW_H2_CLIENT : DW_H2_SERVER;
	struct dw_h2_dir *client;
	struct dw_h2_conn *h2;
	bool lost;

	if (conn->h2.state == DW_H2_LOST || !b->len)
		return false;
	if (conn->h2.state == DW_H2_NEVER) {
		if (!conn->tls.looks || way != H2_TX)
			return false;
		conn->tls.looks--;
	}
	/* a direction's first bytes, or a plaintext connection's later sends (DW_TLS_LOOKS) */
	if ((conn->h2.state == DW_H2_NEVER || !(conn->h2.seen & (way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX))) &&
	    !h2_first(sk, conn, way, b, skb, side, from_skb))
		return false;
	if (conn->h2.state == DW_H2_TLS)
		return false;
	h2 = h2_of(sk);
	if (!h2) {
		h2_free(sk, conn, DW_H2_NEVER);
		return false;
	}
	if (from_skb) {
		struct h2_walk w = { .conn = conn, .h2 = h2, .skb = skb, .now = now, .in_task = way == H2_TX,
				     .dir = way == H2_TX ? &h2->tx : &h2->rx,
				     .cur = way == H2_TX ? &h2->tx_cur : &h2->rx_cur };

		lost = walk_skb_bytes(&w, b);
	} else {
		lost = h2_walk_user(conn, h2, b, now, way);
	}
	if (lost) {
		h2_lost(sk, conn);
		return false;
	}
	client = conn->role == DW_ROLE_OUTBOUND ? &h2->tx : &h2->rx;
	if (conn->h2.state == DW_H2_MAYBE && !client->pre)
		h2_on(conn, now);
	/* an inbound row's process, who answers on the port: noted at its first answer, as today */
	if (conn->role == DW_ROLE_INBOUND && way == H2_TX && !conn->process_noted)
		row_process(conn, bpf_get_current_pid_tgid() >> 32);
	return true;
}

/*
 * syscalls backend, a system call's entry: whether the stream layer wants its bytes at the exit:
 * an h2c connection's, a direction's first, or, on a connection that began in plaintext, a send
 * that may be a TLS hello (DW_TLS_LOOKS).
 */
static __always_inline bool h2_sys_wanted(const struct dw_conn *conn, __u32 op)
{
	__u8 seen = op == DW_SYS_SEND ? DW_H2_SEEN_TX : DW_H2_SEEN_RX;

	return h2_took(conn) ||
	       ((conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_TLS) && !(conn->h2.seen & seen)) ||
	       (op == DW_SYS_SEND && conn->h2.state == DW_H2_NEVER && conn->tls.looks);
}

/* A send begins (sock backend, tcp_sendmsg_locked): its bytes are the msghdr's. */
static __always_inline bool h2_on_send_msg(const struct sock *sk, struct dw_conn *conn,
					   const struct msghdr *msg)
{
	struct h2_bytes b = {};
	__u8 type;

	if ((conn->h2.state == DW_H2_NEVER && !conn->tls.looks) || conn->h2.state == DW_H2_LOST || !msg)
		return false;
	type = msg->msg_iter.iter_type;
	b.len = msg->msg_iter.count;
	b.off = msg->msg_iter.iov_offset;
	b.seq = tcp_of(sk)->write_seq;
	/*
	 * The addresses are read as numbers (a probe read), not loaded as the
	 * pointers BTF says they are: the verifier would track a pointer's
	 * offset through every step of the walk and never see two steps alike.
	 */
	if (type == bpf_core_enum_value(enum iter_type, ITER_UBUF)) {
		b.kind = H2_SRC_USER;
		bpf_core_read(&b.addr, sizeof(b.addr), &msg->msg_iter.ubuf);
	} else if (type == bpf_core_enum_value(enum iter_type, ITER_IOVEC)) {
		b.kind = H2_SRC_IOV_KERNEL;
		bpf_core_read(&b.addr, sizeof(b.addr), &msg->msg_iter.__iov);
		b.nseg = msg->msg_iter.nr_segs;
	} else {
		/* kernel memory (sendfile, splice, kTLS): not walked; on an h2c connection, a gap */
		return false;
	}
	return h2_on_bytes(sk, conn, H2_TX, &b, 0, bpf_ktime_get_ns(), false);
}

/* A copy to user space (sock backend, skb_copy_datagram_iovec): the bytes the reader takes. */
static __always_inline void h2_on_copy(const struct sk_buff *skb, int len)
{
	struct h2_bytes b = { .kind = H2_SRC_SKB, .len = len };
	struct bpf_dynptr d;
	const struct sock *sk;
	struct dw_conn *conn;
	__u32 skb_seq;

	if (!*(volatile __u32 *)&dw_h2_live && !*(volatile __u32 *)&dw_h2_pending)
		return;
	if (!skb || len <= 0)
		return;
	sk = skb->sk;
	if (!sk || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	conn = conn_of(sk);
	if (!conn || conn->h2.state == DW_H2_NEVER || conn->h2.state == DW_H2_LOST)
		return;
	if (!bpf_dynptr_from_skb || bpf_dynptr_from_skb((struct __sk_buff *)skb, 0, &d))
		return;
	/* the reader copies from copied_seq on (tcp_recvmsg_locked), the skb's data from cb->seq */
	skb_seq = BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, seq);
	b.seq = BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);
	b.off = b.seq - skb_seq;
	if (BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, tcp_flags) & 0x02 /* TCPHDR_SYN */)
		b.off--;
	h2_on_bytes(sk, conn, H2_RX, &b, &d, bpf_ktime_get_ns(), true);
}

/*
 * A read ended (sock backend, sock_recv_length): its bytes (readend.bpf.h)
 * start ret bytes before copied_seq. On anything but an h2c connection (or
 * one whose first bytes are still to be looked at) the check below leaves
 * after two loads of globals. A read whose bytes are not found is not
 * walked: on an h2c connection the next walk finds a gap, which is a
 * desync (never an invented call). A peek is not walked: the bytes come
 * again.
 */
static __always_inline void h2_read_walk(const struct sock *sk, int ret);

static __always_inline void h2_on_read(const struct sock *sk, int ret, int flags)
{
	if (!dw_h2_at_read || ret <= 0 || (flags & MSG_PEEK))
		return;
	if (!*(volatile __u32 *)&dw_h2_live && !*(volatile __u32 *)&dw_h2_pending)
		return;
	h2_read_walk(sk, ret);
}

/*
 * Inline: the walk's steps are a global function (h2/h2walk.bpf.h), which
 * keeps the verifier's work here small; a subprogram of its own would take
 * the chain of frames (program, this, callback, step) past 512 bytes.
 */
static __always_inline void h2_read_walk(const struct sock *sk, int ret)
{
	struct h2_bytes b = {};
	struct dw_conn *conn;

	if (!sk)
		return;
	conn = conn_of(sk);
	if (!conn || conn->h2.state == DW_H2_NEVER || conn->h2.state == DW_H2_LOST)
		return;
	if (!read_end_bytes(&b, ret))
		return;
	b.seq = read_end_seq(sk, ret);
	h2_on_bytes(sk, conn, H2_RX, &b, 0, bpf_ktime_get_ns(), false);
}

#endif /* DEPWATCH_STREAMS_BPF_H */
