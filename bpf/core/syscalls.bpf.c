// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The "syscalls" backend, for kernels without the socket tracepoints
 * (sock_send_length and sock_recv_length, Linux 6.3): the send and receive
 * system calls' classic tracepoints feed the same call model.
 *
 * At entry the file descriptor is resolved to its socket with CO-RE reads
 * (current task -> files -> fdt -> fd[fd] -> f_inode->i_mode, then
 * private_data -> sk; bpf_get_current_task_btf() needs Linux 5.11).
 * Anything that is not a socket, or a socket depwatch does not track (a
 * TCP connection, outbound or accepted, adopted by inet_sock_set_state), ends
 * there: read and write on files, pipes and other sockets cost that walk
 * and one failed lookup at exit. For a tracked
 * socket the entry remembers the socket per thread (sys_calls, keyed by
 * pid_tgid), and for a send when it began; the exit, with the system
 * call's result, hands it to dw_on_send() or dw_on_recv(). Resolving at entry names the socket the call
 * works on: the system call holds its file until it returns, while the
 * descriptor may be closed and reused by another thread meanwhile.
 *
 * There is no sk_data_ready here: a call completes at the first successful
 * receive, so a caller that reads late makes its dependency look slower.
 * Classic tracepoint programs may not use socket storage, which is why this
 * backend keeps per-connection state in conns_sk (see callmodel.bpf.h).
 *
 * One entry program serves every system call that passes the descriptor,
 * the flags and the bytes at the same places, one exit program each
 * direction; the loader attaches them, see dw_syscall_specs in
 * user/hooks.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* no room for the TLS read-side tie here (bpf/tls/tlslink.bpf.h, tls_owner_of()) */
#define DW_TLS_NO_OWNER 1
#include "core/maps.bpf.h"
#include "h2/maps.bpf.h"
#include "core/conn.bpf.h"
#include "tls/maps.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "answer/outcome.bpf.h"
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/closing.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2detect.bpf.h"
#include "h2/h2stream.bpf.h"
#include "h2/hblock.bpf.h"
#include "h2/h2walk.bpf.h"
#include "h2/streams.bpf.h"
#include "answer/answer.bpf.h"
#include "answer/goodbye.bpf.h"
#include "tls/tlslink.bpf.h"
#include "core/callmodel.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define DW_SYS_SEND 1
#define DW_SYS_RECV 2

#define DW_S_IFMT 00170000
#define DW_S_IFSOCK 0140000

/* Every syscalls/sys_enter_* event (tracefs format): 8-byte arguments from offset 16. */
struct dw_sys_enter_args {
	__u64 common;		/* common_type, common_flags, common_preempt_count, common_pid */
	__s32 nr;		/* __syscall_nr */
	__u32 pad;
	__u64 args[6];		/* a program may read only as many as its system calls have */
};

/* Every syscalls/sys_exit_* event. */
struct dw_sys_exit_args {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

/*
 * The socket behind a file descriptor of the current task, or 0 if it is not
 * a socket. task -> files -> fdt are direct (fault-safe) loads through the
 * BTF-typed current task; the descriptor's slot, the file and what hangs off
 * it are probe reads: three for a file that is not a socket, five for one that is.
 */
static __always_inline const struct sock *sys_sock_of_fd(__u64 fd_arg)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	int fd = (int)fd_arg;
	struct file **fds, *file;
	struct socket *sock;
	umode_t mode;

	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return 0;
	fds = fdt->fd;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	if ((mode & DW_S_IFMT) != DW_S_IFSOCK)
		return 0;
	sock = BPF_CORE_READ(file, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* The call's bytes carry an answer whose status is read (answer.bpf.h): outbound receives, inbound sends. */
static __always_inline bool sys_answer_wanted(const struct dw_conn *conn, __u32 op)
{
	if (!conn->call_start_ns || !outcome_wanted(conn))
		return false;
	return op == DW_SYS_RECV ? conn->role == DW_ROLE_OUTBOUND : conn->role == DW_ROLE_INBOUND;
}

/*
 * A tracked connection; or, for a send, a TCP socket not connected yet: with
 * TCP Fast Open the send itself connects (and adopts) it, and carries the
 * request in the SYN. *bytes: the stream layer wants to see the call's bytes.
 */
static __always_inline int sys_wanted(const struct sock *sk, __u32 op, bool *bytes, __u8 *bye)
{
	struct dw_conn *conn = conn_of(sk);
	__u8 seen = op == DW_SYS_SEND ? DW_H2_SEEN_TX : DW_H2_SEEN_RX;

	*bytes = false;
	*bye = 0;
	if (conn) {
		/* a memory-BIO TLS library's ciphertext read (bpf/tls/tlslink.bpf.h, tls_sys_rx) */
		if (op == DW_SYS_RECV)
			tls_sys_rx_note(sk, conn);
		/*
		 * A send that would start a call, or a receive that would start an
		 * inbound request (1) or read the body after a MySQL header (2):
		 * its bytes may be a goodbye (goodbye.bpf.h).
		 */
		if (op == DW_SYS_SEND)
			*bye = goodbye_wanted(conn);
		else if (conn->role == DW_ROLE_INBOUND && !conn->tls.hello &&
			 (conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_NEVER))
			*bye = !conn->call_start_ns ? 1 : conn->answer.bye == DW_BYE_HEAD ? 2 : 0;
		*bytes = h2_took(conn) || ((conn->h2.state == DW_H2_UNKNOWN || conn->h2.state == DW_H2_TLS) &&
					   !(conn->h2.seen & seen)) || sys_answer_wanted(conn, op) ||
			 (op == DW_SYS_SEND && conn->h2.state == DW_H2_NEVER && conn->tls.looks);
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
 * has its first bytes read for a goodbye (goodbye.bpf.h), once, here.
 */
static __always_inline int sys_track(const struct sock *sk, __u32 op, __u64 flags, int kind, __u64 arg,
				     __u64 nseg)
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
	if (bye && op == DW_SYS_SEND && kind == SYS_BUF && !dw_goodbye_size(nseg))
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
			b.len = kind == SYS_BUF ? nseg : DW_GOODBYE_PEEK;
			b.kind = call.nseg ? H2_SRC_IOV_USER : H2_SRC_USER;
			if (kind == SYS_BUF || call.nseg)
				call.bye_len = dw_goodbye_read(&b);
		}
		/*
		 * A receive: its buffer is looked at by the exit (dw_sys_goodbye):
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

static __always_inline int sys_enter(__u64 fd, __u32 op, __u64 flags, int kind, __u64 arg, __u64 nseg)
{
	return sys_track(sys_sock_of_fd(fd), op, flags, kind, arg, nseg);
}

/* sendmmsg, sendfile64: bytes the stream layer does not read */
SEC("tracepoint")
int dw_sys_enter_send(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_NOBUF, 0, 0);
}

/* write(fd, buf, count), sendto(fd, buf, len, flags, ...): the count in nseg's place (a goodbye's length) */
SEC("tracepoint")
int dw_sys_enter_send_buf(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_BUF, ctx->args[1], ctx->args[2]);
}

/* writev(fd, iov, iovcnt), pwritev2(fd, iov, iovcnt, ...) */
SEC("tracepoint")
int dw_sys_enter_send_iov(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_IOV, ctx->args[1], ctx->args[2]);
}

/* sendmsg(fd, msg, flags) */
SEC("tracepoint")
int dw_sys_enter_sendmsg(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_MSG, ctx->args[1], 0);
}

/* read(fd, buf, count): no MSG_* flags */
SEC("tracepoint")
int dw_sys_enter_read(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0, SYS_BUF, ctx->args[1], 0);
}

/* readv(fd, iov, iovcnt), preadv2(fd, iov, iovcnt, ...): no MSG_* flags */
SEC("tracepoint")
int dw_sys_enter_readv(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0, SYS_IOV, ctx->args[1], ctx->args[2]);
}

/* recvfrom(fd, buf, len, flags, ...) */
SEC("tracepoint")
int dw_sys_enter_recvfrom(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, ctx->args[3], SYS_BUF, ctx->args[1], 0);
}

/* recvmmsg(fd, msgs, vlen, flags, timeout): bytes the stream layer does not read */
SEC("tracepoint")
int dw_sys_enter_recv_flags3(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, ctx->args[3], SYS_NOBUF, 0, 0);
}

/* recvmsg(fd, msg, flags) */
SEC("tracepoint")
int dw_sys_enter_recvmsg(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, ctx->args[2], SYS_MSG, ctx->args[1], 0);
}

/* splice(fd_in, off_in, fd_out, off_out, len, flags): into a socket a send, out of one a receive */
SEC("tracepoint")
int dw_sys_enter_splice(struct dw_sys_enter_args *ctx)
{
	const struct sock *out = sys_sock_of_fd(ctx->args[2]);

	if (out)
		return sys_track(out, DW_SYS_SEND, 0, SYS_NOBUF, 0, 0);
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0, SYS_NOBUF, 0, 0);
}

/*
 * The call's bytes to the stream layer, where they were asked for: true if
 * it took the event (an h2c connection's), which the transport model then
 * leaves alone. A peek is not walked: the bytes come again.
 */
static __always_inline bool sys_h2(const struct dw_sys_call *call, int ret, const __u32 op)
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
__noinline int dw_sys_answer(const struct dw_sys_call *call, int ret, __u32 op)
{
	const struct sock *sk;
	struct h2_bytes b = {};
	struct dw_conn *conn;

	if (!call || !call->bytes || ret <= 0 || !op || call->op != op)
		return 0;
	sk = (const struct sock *)(unsigned long)call->sk;
	conn = conn_of(sk);
	if (!conn || !sys_answer_wanted(conn, op))
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
__noinline int dw_sys_goodbye(const struct dw_sys_call *call, int ret)
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
__noinline int dw_sys_answer_done(const struct dw_sys_call *call)
{
	struct dw_conn *conn;

	if (!call || !call->bytes)
		return 0;
	conn = conn_of((const struct sock *)(unsigned long)call->sk);
	if (conn)
		conn->answer.status = 0;
	return 0;
}

/*
 * A traced system call's exit: op, DW_SYS_SEND or DW_SYS_RECV, for the exit
 * programs of one direction (their bytes go to the stream layer first), 0
 * for splice's, which may be either and whose bytes are not read.
 */
static __always_inline int sys_exit(const struct dw_sys_exit_args *ctx, __u32 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_sys_call *p = bpf_map_lookup_elem(&sys_calls, &id);
	struct dw_sys_call call;
	__s64 ret = ctx->ret;
	int r;

	if (!p)
		return 0;
	call = *p;
	bpf_map_delete_elem(&sys_calls, &id);
	r = ret > 0x7fffffff ? 0x7fffffff : (int)ret;	/* sendfile, splice: maybe more than 2 GiB */
	if (op && call.op == op && sys_h2(&call, r, op))
		return 0;
	dw_sys_answer(&call, r, op);
	if (call.op == DW_SYS_SEND)
		dw_on_send((const struct sock *)(unsigned long)call.sk, r, call.enter_ns, call.rcv_seq,
			   call.bye_len, DW_SK_PROBED);
	else
		dw_on_recv((const struct sock *)(unsigned long)call.sk, r, call.flags, DW_SK_PROBED);
	dw_sys_goodbye(&call, r);
	dw_sys_answer_done(&call);
	return 0;
}

SEC("tracepoint")
int dw_sys_exit_send(struct dw_sys_exit_args *ctx)
{
	return sys_exit(ctx, DW_SYS_SEND);
}

SEC("tracepoint")
int dw_sys_exit_recv(struct dw_sys_exit_args *ctx)
{
	return sys_exit(ctx, DW_SYS_RECV);
}

/* splice's exit */
SEC("tracepoint")
int dw_sys_exit(struct dw_sys_exit_args *ctx)
{
	return sys_exit(ctx, 0);
}
