/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The "syscalls" backend's events (core/syscalls.bpf.c's programs): a send
 * or receive system call's entry on a tracked socket is remembered per
 * thread (sys_calls), with where its bytes are when a layer wants them;
 * its exit hands the call to the call model's dw_on_send() or
 * dw_on_recv(). The layers have their say at both through the seam
 * (layers/sys.bpf.h): what they want of the call at the entry, its bytes
 * at the exit.
 *
 * Needs, included before it: core/callmodel.bpf.h, layers/sys.bpf.h.
 */
#ifndef DEPWATCH_SYSMODEL_BPF_H
#define DEPWATCH_SYSMODEL_BPF_H

/*
 * A tracked connection; or, for a send, a TCP socket not connected yet: with
 * TCP Fast Open the send itself connects (and adopts) it, and carries the
 * request in the SYN. *bytes: a layer wants to see the call's bytes at the exit; *bye:
 * the length of a goodbye they may be (layers_sys_enter()).
 */
static __always_inline int sys_wanted(const struct sock *sk, __u32 op, bool *bytes, __u8 *bye)
{
	struct dw_conn *conn = conn_of(sk);

	*bytes = false;
	*bye = 0;
	if (conn) {
		/* what the layers want of it: its bytes at the exit, a goodbye's (layers/sys.bpf.h) */
		layers_sys_enter(sk, conn, op, bytes, bye);
		return conn->role != DW_ROLE_NONE;
	}
	return op == DW_SYS_SEND && BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE &&
	       BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

/* How a system call passes its bytes: enum dw_sys_buf, and where (the argument). */
enum dw_sys_buf { SYS_NOBUF = 0, SYS_BUF, SYS_IOV, SYS_MSG };

/*
 * Remembers a system call on a tracked socket for its exit: arg is the
 * buffer, the iovec array or the msghdr (kind), nseg the iovecs' count,
 * or a send's buffer's length (SYS_BUF). A send that would start a call
 * has its first bytes read for a goodbye (layers_sys_bye()), once, here.
 * The syscalls backend's first event: its programs call it with the socket
 * their descriptor is (0: none).
 */
static __always_inline int dw_on_sys_enter(const struct sock *sk, __u32 op, __u64 flags, int kind,
					   __u64 arg, __u64 nseg)
{
	struct dw_sys_call call = { .op = op, .flags = (__s32)flags };
	struct h2_bytes b = {};
	struct user_msghdr m;
	bool bytes;
	__u8 bye;
	__u64 id;

	if (!sk || !sys_wanted(sk, op, &bytes, &bye))
		return 0;
	call.sk = (__u64)(unsigned long)sk;
	/*
	 * A call starts when its send began, if its socket could be answered
	 * then (or is not connected yet: TCP Fast Open connects in this send):
	 * the answer, and the peer's FIN, may come before the send returns.
	 */
	if (op == DW_SYS_SEND) {
		int state = BPF_CORE_READ(sk, __sk_common.skc_state);

		if (state == TCP_ESTABLISHED || state == TCP_CLOSE) {
			call.enter_ns = bpf_ktime_get_ns();
			call.rcv_seq = BPF_CORE_READ((const struct tcp_sock *)sk, rcv_nxt);
		}
	}
	/* a buffer's length (nseg: write's and sendto's count) says whether it can be a goodbye */
	if (bye && op == DW_SYS_SEND && kind == SYS_BUF && !layers_sys_bye_size(nseg))
		bye = 0;
	if ((bytes || bye) && kind != SYS_NOBUF) {
		call.buf = arg;
		call.nseg = kind == SYS_IOV ? nseg : 0;
		if (kind == SYS_MSG) {
			if (bpf_probe_read_user(&m, sizeof(m), (const void *)arg))
				goto save;
			call.buf = (__u64)(unsigned long)m.msg_iov;
			call.nseg = m.msg_iovlen;
		}
		if (bye && op == DW_SYS_SEND) {
			b.addr = call.buf;
			b.nseg = call.nseg;
			b.len = kind == SYS_BUF ? nseg : layers_sys_bye_peek();
			b.kind = call.nseg ? H2_SRC_IOV_USER : H2_SRC_USER;
			if (kind == SYS_BUF || call.nseg)
				call.bye_len = layers_sys_bye(&b);
		}
		/*
		 * A receive: its buffer is looked at by the exit (layers_sys_read()):
		 * 1, a request's first read; 2, the body after a MySQL header.
		 */
		if (op == DW_SYS_RECV)
			call.bye_len = bye;
		call.seq = op == DW_SYS_SEND ? BPF_CORE_READ((const struct tcp_sock *)sk, write_seq) :
					       BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);
		call.bytes = bytes;
	}
save:
	id = bpf_get_current_pid_tgid();
	if (!bpf_map_update_elem(&sys_calls, &id, &call, BPF_ANY))
		return 0;
	global_count(G_thread_map_full);
	return 0;
}

/*
 * A traced system call's exit, ret its result: op, DW_SYS_SEND or
 * DW_SYS_RECV, for the exit programs of one direction (their bytes go to
 * the layers first: an h2c connection's are its streams'), 0 for
 * splice's, which may be either and whose bytes are not read. Around the
 * call model's event, the layers read the call's buffer: an answer's
 * status before it (the call's end counts it), an inbound request's
 * goodbye after it (the request began there), and a status no call took
 * is dropped last. Each of those three is a global function at the seam
 * (layers/sys.bpf.h), called without a test: verified once, and no branch
 * that would double the verifier's walk of the call model after it.
 */
static __always_inline int dw_on_sys_exit(__s64 ret, __u32 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_sys_call *p = bpf_map_lookup_elem(&sys_calls, &id);
	struct dw_sys_call call;
	int r;

	if (!p)
		return 0;
	call = *p;
	bpf_map_delete_elem(&sys_calls, &id);
	r = ret > 0x7fffffff ? 0x7fffffff : (int)ret;	/* sendfile, splice: maybe more than 2 GiB */
	if (op && call.op == op && layers_sys_bytes(&call, r, op))
		return 0;
	layers_sys_answer(&call, r, op);
	if (call.op == DW_SYS_SEND)
		dw_on_send((const struct sock *)(unsigned long)call.sk, r, call.enter_ns, call.rcv_seq,
			   call.bye_len, DW_SK_PROBED);
	else
		dw_on_recv((const struct sock *)(unsigned long)call.sk, r, call.flags, DW_SK_PROBED);
	layers_sys_read(&call, r);
	layers_sys_done(&call);
	return 0;
}

#endif /* DEPWATCH_SYSMODEL_BPF_H */
