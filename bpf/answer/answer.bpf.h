/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where an answer's first bytes are read for its outcome (outcome.bpf.h),
 * beside the stream layer, which reads the same places for HTTP/2:
 * - syscalls backend, outbound: the receive that completes the call, its
 *   user buffer at the system call's exit, where its first byte is the
 *   first the peer sent after the request began (copied_seq at the
 *   receive's entry = rcv_nxt at the send's entry);
 * - either backend, inbound: the service's first send after a request,
 *   which completes it (the sock backend's msghdr at tcp_sendmsg_locked,
 *   the syscalls backend's buffer at the exit);
 * - sock backend, outbound: the call completes at sk_data_ready, when the
 *   bytes reach the socket, before anyone can read them. Its latency is
 *   that moment's; its outcome is owed (conn->answer.ns) until the
 *   reader's copy (skb_copy_datagram_iovec) of the answer's first byte
 *   (copied_seq when it came: what was there before had been read),
 *   where the call is counted, with its first-byte time and its status.
 *   Whatever else would end it meanwhile (the peer's FIN behind a
 *   Connection: close answer) leaves it to the copy; the next request on
 *   the connection, or its TCP_CLOSE, settles it unread (outcome unknown).
 *   An owed call is out of the pending table (not outstanding to the
 *   judge) and still in flight in the counters until its copy.
 * Only the first DW_HTTP1_PEEK bytes of one buffer (the first iovec) are
 * read; a status line split across two is unknown, never guessed.
 *
 * Needs, included before it: core/call.bpf.h, core/readend.bpf.h.
 */
#ifndef DEPWATCH_ANSWER_BPF_H
#define DEPWATCH_ANSWER_BPF_H

/* Calls answered whose outcome is owed to a copy (sock backend): the copy hook leaves at once while 0. */
__u32 dw_answers_owed __weak;

/* Looks at copies after a 1xx for the final status line, before the outcome is unknown. */
#define DW_ANSWER_LOOKS 3

/*
 * An answer's first bytes in user memory (b's first buffer: a user buffer,
 * or the first iovec of an array in user or kernel memory), read for the
 * outstanding call's outcome. Global, verified once (see dw_outcome_peek()).
 * Returns what dw_outcome_peek() read (DW_HTTP1_SHORT: nothing readable).
 */
__weak __noinline int dw_answer_read_user(struct dw_conn *conn, struct h2_bytes *b)
{
	struct dw_peek pk = {};
	__u64 at;
	__u32 n;
	struct iovec v;
	long err;

	if (!conn || !b)
		return 0;
	at = b->addr + b->off;
	n = b->len;
	if (b->kind == H2_SRC_IOV_USER || b->kind == H2_SRC_IOV_KERNEL) {
		err = !b->nseg ? -1 :
		      b->kind == H2_SRC_IOV_KERNEL ?
			      bpf_probe_read_kernel(&v, sizeof(v), (const void *)b->addr) :
			      bpf_probe_read_user(&v, sizeof(v), (const void *)b->addr);
		if (err || v.iov_len <= b->off) {
			n = 0;
		} else {
			at = (__u64)(unsigned long)v.iov_base + b->off;
			if (v.iov_len - b->off < n)
				n = v.iov_len - b->off;
		}
	}
	if (n > DW_HTTP1_PEEK)
		n = DW_HTTP1_PEEK;
	barrier_var(n);
	if (n == 0 || n > DW_HTTP1_PEEK || bpf_probe_read_user(pk.b, n, (const void *)at)) {
		if (conn->answer.http1 == DW_HTTP1_YES)
			conn->answer.status = DW_STATUS_UNKNOWN;
		return DW_HTTP1_SHORT;
	}
	pk.n = n;
	return dw_outcome_peek(conn, &pk);
}

static __always_inline void answer_read_user(struct dw_conn *conn, struct h2_bytes *b)
{
	dw_answer_read_user(conn, b);
}

/* A send's bytes at tcp_sendmsg_locked (sock backend), as h2_on_send_msg() finds them; false: none. */
static __always_inline bool answer_msg_bytes(const struct msghdr *msg, struct h2_bytes *b)
{
	__u8 type;

	if (!msg)
		return false;
	type = msg->msg_iter.iter_type;
	b->len = msg->msg_iter.count;
	b->off = msg->msg_iter.iov_offset;
	if (type == bpf_core_enum_value(enum iter_type, ITER_UBUF)) {
		b->kind = H2_SRC_USER;
		bpf_core_read(&b->addr, sizeof(b->addr), &msg->msg_iter.ubuf);
		return true;
	}
	if (type == bpf_core_enum_value(enum iter_type, ITER_IOVEC)) {
		b->kind = H2_SRC_IOV_KERNEL;
		bpf_core_read(&b->addr, sizeof(b->addr), &msg->msg_iter.__iov);
		b->nseg = msg->msg_iter.nr_segs;
		return true;
	}
	return false;	/* kernel memory (sendfile, splice): not read, the outcome stays unknown */
}

/* An inbound answer begins (sock backend): its status, before the request completes. */
static __always_inline void answer_inbound_msg(struct dw_conn *conn, const struct msghdr *msg)
{
	struct h2_bytes b = {};

	if (!conn->call_start_ns || !outcome_wanted(conn))
		return;
	/* no bytes (b.len 0): the outcome is unknown */
	answer_msg_bytes(msg, &b);
	answer_read_user(conn, &b);
}

/*
 * The outstanding call was answered at at (sock backend, sk_data_ready):
 * where its outcome can be read, it is owed to the copy; otherwise it
 * completes now.
 */
static __always_inline void answer_came_at(const struct sock *sk, struct dw_conn *conn, __u64 at)
{
	struct dw_pending_entry *e;
	__u64 start = conn->call_start_ns;

	if (!outcome_wanted(conn) || !start) {
		call_complete(conn, at);
		return;
	}
	conn->answer.looks = 0;
	/* its first byte: the reader has taken all before it (HTTP/1 answers one request at a time) */
	conn->rcv_seq = tcp_of(sk)->copied_seq;
	conn->answer.ns = at;
	__sync_fetch_and_add(&dw_answers_owed, 1);
	/* answered: no longer outstanding to the judge, whenever the reader comes */
	e = pend_of(conn);
	if (e)
		__sync_val_compare_and_swap(&e->call_start_ns, start, 0);
}

/*
 * syscalls backend: whether a system call's bytes carry the outstanding call's answer, whose
 * status is read at the exit (layers_sys_answer()): outbound receives, inbound sends.
 */
static __always_inline bool answer_sys_wanted(const struct dw_conn *conn, __u32 op)
{
	if (!conn->call_start_ns || !outcome_wanted(conn))
		return false;
	return op == DW_SYS_RECV ? conn->role == DW_ROLE_OUTBOUND : conn->role == DW_ROLE_INBOUND;
}

/* A status the outstanding call did not take (the syscalls backend's exit): not the next call's. */
static __always_inline void answer_status_drop(struct dw_conn *conn)
{
	conn->answer.status = 0;
}

/*
 * The owed call ends: counted at its answer's time, with the status read
 * (none: unknown); 1 if one was owed. A global function, verified once on its own: inlined
 * into each hook it would be a whole call end more for the verifier to
 * walk in each (tcp_sendmsg_locked's program is near its limit).
 */
__weak __noinline int dw_answer_settle_owed(struct dw_conn *conn)
{
	__u64 at;

	if (!conn)
		return 0;
	at = *(volatile __u64 *)&conn->answer.ns;
	if (!at || __sync_val_compare_and_swap(&conn->answer.ns, at, 0) != at)
		return 0;
	__sync_fetch_and_add(&dw_answers_owed, -1);
	if (!conn->answer.status && conn->answer.http1 == DW_HTTP1_YES)
		conn->answer.status = DW_STATUS_UNKNOWN;
	call_end(conn, OUTCOME_COMPLETED, at);
	conn->answer.status = 0;
	return 1;
}

/*
 * The owed call ends unread: the next request came, or the close. A
 * connection none of whose answers was ever copied to its reader (it reads
 * with splice(), which no copy hook sees) owes no more: its answers
 * complete at their arrival, as without outcomes, their status unknown.
 */
__weak __noinline int dw_answer_settle_unread(struct dw_conn *conn)
{
	if (!conn)
		return 0;
	if (dw_answer_settle_owed(conn) && conn->answer.http1 == DW_HTTP1_UNSEEN)
		conn->answer.http1 = DW_HTTP1_UNCOPIED;
	return 0;
}

/*
 * The owed call, if any, ends. Called without a test of its own: a branch
 * here would double the verifier's walk of all that follows in the hook.
 */
static __always_inline void answer_settle(struct dw_conn *conn)
{
	dw_answer_settle_owed(conn);
}

/*
 * A copy to the reader (sock backend, skb_copy_datagram_iovec): if it
 * begins at an owed answer's first byte, the status line is read there.
 * A 1xx first: the next copies are looked at (DW_ANSWER_LOOKS). True if
 * the copy was an owed answer's connection's: the stream layer has nothing
 * to do there (an HTTP/1 connection), and the hook leaves.
 */
static __always_inline bool answer_on_copy(const struct sk_buff *skb, int len)
{
	struct dw_peek pk = {};
	const struct sock *sk;
	struct dw_conn *conn;
	struct bpf_dynptr d;
	__u32 seq, off, n;
	int r;

	if (!*(volatile __u32 *)&dw_answers_owed || !skb || len <= 0)
		return false;
	sk = skb->sk;
	if (!sk || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return false;
	conn = conn_of(sk);
	if (!conn || !conn->answer.ns)
		return false;
	seq = BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);
	if (!conn->answer.looks) {
		if ((__s32)(seq - conn->rcv_seq) < 0)
			return true;		/* bytes from before the request, still being read */
		if (seq != conn->rcv_seq) {
			answer_settle(conn);	/* its first byte went by unseen */
			return true;
		}
	}
	n = (__u32)len < DW_HTTP1_PEEK ? (__u32)len : DW_HTTP1_PEEK;
	barrier_var(n);
	n &= DW_HTTP1_PEEK * 2 - 1;	/* at most 64 already: the mask says so to the verifier */
	if (n > DW_HTTP1_PEEK)
		n = DW_HTTP1_PEEK;
	off = seq - BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, seq);
	if (BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, tcp_flags) & 0x02 /* TCPHDR_SYN */)
		off--;
	if (!bpf_dynptr_from_skb || bpf_dynptr_from_skb((struct __sk_buff *)skb, 0, &d) ||
	    bpf_dynptr_read(pk.b, n, &d, off, 0)) {
		answer_settle(conn);
		return true;
	}
	pk.n = n;
	r = dw_outcome_peek(conn, &pk);
	if (r == DW_HTTP1_INTERIM && conn->answer.looks < DW_ANSWER_LOOKS) {
		conn->answer.looks++;
		conn->answer.status = 0;
		return true;
	}
	answer_settle(conn);
	return true;
}

/*
 * A read ended (sock backend at the read's end, readend.bpf.h: x86-64,
 * where the copy hook is not loaded): if it holds an owed answer's first
 * byte, the status line is read from the reader's buffer, as
 * answer_on_copy() reads it from the skb. Not inlined, for the same reason
 * as h2_read_walk().
 */
static __noinline void answer_read_walk(const struct sock *sk, int ret)
{
	struct h2_bytes b = {};
	struct dw_conn *conn;
	__u32 first, skip = 0;
	int r;

	if (!sk)
		return;
	conn = conn_of(sk);
	if (!conn || !conn->answer.ns)
		return;
	first = read_end_seq(sk, ret);
	if (!conn->answer.looks) {
		if ((__s32)(first + (__u32)ret - conn->rcv_seq) <= 0)
			return;			/* bytes from before the request, still being read */
		if ((__s32)(conn->rcv_seq - first) < 0) {
			answer_settle(conn);	/* its first byte went by unseen */
			return;
		}
		skip = conn->rcv_seq - first;	/* the answer begins within this read */
	}
	if (skip >= (__u32)ret || !read_end_bytes(&b, ret)) {
		answer_settle(conn);
		return;
	}
	b.off = skip;
	b.len = ret - skip;
	r = dw_answer_read_user(conn, &b);
	if (r == DW_HTTP1_INTERIM && conn->answer.looks < DW_ANSWER_LOOKS) {
		conn->answer.looks++;
		conn->answer.status = 0;
		return;
	}
	answer_settle(conn);
}

static __always_inline void answer_on_read(const struct sock *sk, int ret, int flags)
{
	if (!dw_h2_at_read || ret <= 0 || (flags & MSG_PEEK) || !*(volatile __u32 *)&dw_answers_owed)
		return;
	answer_read_walk(sk, ret);
}

#endif /* DEPWATCH_ANSWER_BPF_H */
