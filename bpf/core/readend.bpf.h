/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a read's bytes are when it ends (sock backend, sock_recv_length, in
 * the reading task): in the user buffers its system call passed, found in
 * the task's saved registers as the syscalls backend finds them at the exit
 * (x86-64 only). A read through anything but read, readv, preadv2, recvfrom
 * or recvmsg (recvmmsg, io_uring) is not found. Its readers: the stream
 * layer (h2_on_read, streams.bpf.h) and an owed answer's status line
 * (answer_on_read, answer.bpf.h); both replace the copy hook
 * (skb_copy_datagram_iovec), which then is not loaded (issue 36: it ran on
 * every copy of every socket).
 *
 * Needs, included before it: core/sockread.bpf.h, core/bytes.bpf.h.
 */
#ifndef DEPWATCH_READEND_BPF_H
#define DEPWATCH_READEND_BPF_H

/*
 * 1 (set by the loader, x86-64 only) when the sock backend reads a
 * receive's bytes at the read's end, and dw_h2_copy is not loaded.
 */
const volatile __u32 dw_h2_at_read __weak = 0;

/* The ret bytes the current task's read just returned, into b (kind, addr, nseg, len); false: not found. */
static __always_inline bool read_end_bytes(struct h2_bytes *b, int ret)
{
#if defined(__TARGET_ARCH_x86)
	const struct user_msghdr *m;
	struct pt_regs *regs;
	__u64 nseg;
	long nr;

	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return false;
	b->kind = H2_SRC_USER;
	b->len = ret;
	/*
	 * Each value read into a register of its own (barrier_var): the compiler
	 * would otherwise load readv's dx and recvmsg's msg_iovlen with one
	 * instruction, from two kinds of pointer, which the verifier refuses.
	 */
	nr = regs->orig_ax;
	b->addr = regs->si;
	nseg = regs->dx;
	barrier_var(nseg);
	b->nseg = nseg;
	switch (nr) {
	case 0:		/* read(fd, buf, count) */
	case 45:	/* recvfrom(fd, buf, len, flags, ...) */
		b->nseg = 0;
		return true;
	case 19:	/* readv(fd, iov, iovcnt) */
	case 327:	/* preadv2(fd, iov, iovcnt, ...) */
		b->kind = H2_SRC_IOV_USER;
		return true;
	case 47:	/* recvmsg(fd, msg, flags) */
		/* two fields, not the whole msghdr: with bpf_loop's frame, the stack is near its 512 bytes */
		m = (const struct user_msghdr *)(unsigned long)b->addr;
		if (bpf_probe_read_user(&b->addr, sizeof(b->addr), &m->msg_iov) ||
		    bpf_probe_read_user(&nseg, sizeof(nseg), &m->msg_iovlen))
			return false;
		b->kind = H2_SRC_IOV_USER;
		barrier_var(nseg);
		b->nseg = nseg;
		return true;
	}
#endif
	return false;
}

/*
 * The sequence number of the first of the ret bytes a read just returned:
 * copied_seq less ret, less the peer's FIN when this read took it too
 * (tcp_recvmsg_locked's found_fin_ok moves copied_seq past the FIN: the
 * last data and the FIN in one segment, a client's GOAWAY and close; then,
 * and only then, copied_seq is rcv_nxt with the FIN in it). Without this
 * the walk started one byte late on such a read: h2_desync (issue 36).
 */
static __always_inline __u32 read_end_seq(const struct sock *sk, int ret)
{
	__u32 copied = BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);

	if (copied == BPF_CORE_READ((const struct tcp_sock *)sk, rcv_nxt))
		copied -= fin_of(sk, DW_SK_PROBED);
	return copied - (__u32)ret;
}

#endif /* DEPWATCH_READEND_BPF_H */
