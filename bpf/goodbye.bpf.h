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
 * At most DW_GOODBYE_PEEK bytes of the first buffer: one or two probe
 * reads per call start on connections that are neither TLS nor HTTP/2,
 * and none for a send of any other length where the length is known.
 */
#ifndef DEPWATCH_GOODBYE_BPF_H
#define DEPWATCH_GOODBYE_BPF_H

#include "answer.bpf.h"
#include "goodbye.h"

/*
 * The length of the goodbye the first buffer of b starts (a user buffer,
 * or the first iovec of an array in user or kernel memory), 0 if none.
 * Global, verified once: the hooks that call it pay a call, not its walk.
 */
__weak __noinline int dw_goodbye_read(struct h2_bytes *b)
{
	__u8 p[DW_GOODBYE_PEEK] = {};
	struct iovec v;
	__u64 at;
	__u32 n;
	long err;

	if (!b)
		return 0;
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
	if (n < 5 || n > DW_GOODBYE_PEEK || bpf_probe_read_user(p, n, (const void *)at))
		return 0;
	return dw_goodbye_len(p, n);
}

/* Whether the connection's next call may be a goodbye: outbound, cleartext, no HTTP/2, none outstanding. */
static __always_inline bool goodbye_wanted(const struct dw_conn *conn)
{
	return conn->role == DW_ROLE_OUTBOUND && !conn->call_start_ns && !conn->tls &&
	       (conn->h2 == DW_H2_UNKNOWN || conn->h2 == DW_H2_NEVER);
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

#endif /* DEPWATCH_GOODBYE_BPF_H */
