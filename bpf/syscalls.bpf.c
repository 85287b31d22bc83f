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
 * One program serves every system call that passes the descriptor (and the
 * flags) at the same place; the loader attaches it to each, see
 * dw_syscall_specs in user/hooks.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "callmodel.bpf.h"

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

/*
 * A tracked connection; or, for a send, a TCP socket not connected yet: with
 * TCP Fast Open the send itself connects (and adopts) it, and carries the
 * request in the SYN.
 */
static __always_inline int sys_wanted(const struct sock *sk, __u32 op)
{
	struct dw_conn *conn = conn_of(sk);

	if (conn)
		return conn->role != DW_ROLE_NONE;
	return op == DW_SYS_SEND && BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_CLOSE &&
	       BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

static __always_inline int sys_track(const struct sock *sk, __u32 op, __u64 flags)
{
	struct dw_sys_call call = { .op = op, .flags = (__s32)flags };
	__u64 id;

	if (!sk || !sys_wanted(sk, op))
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
	id = bpf_get_current_pid_tgid();
	if (!bpf_map_update_elem(&sys_calls, &id, &call, BPF_ANY))
		return 0;
	global_count(G_thread_map_full);
	return 0;
}

static __always_inline int sys_enter(__u64 fd, __u32 op, __u64 flags)
{
	return sys_track(sys_sock_of_fd(fd), op, flags);
}

SEC("tracepoint")
int dw_sys_enter_send(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0);
}

/* read, readv, preadv2: no MSG_* flags */
SEC("tracepoint")
int dw_sys_enter_read(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0);
}

/* recvfrom(fd, buf, len, flags, ...), recvmmsg(fd, msgs, vlen, flags, timeout) */
SEC("tracepoint")
int dw_sys_enter_recv_flags3(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, ctx->args[3]);
}

/* recvmsg(fd, msg, flags) */
SEC("tracepoint")
int dw_sys_enter_recvmsg(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_RECV, ctx->args[2]);
}

/* splice(fd_in, off_in, fd_out, off_out, len, flags): into a socket a send, out of one a receive */
SEC("tracepoint")
int dw_sys_enter_splice(struct dw_sys_enter_args *ctx)
{
	const struct sock *out = sys_sock_of_fd(ctx->args[2]);

	if (out)
		return sys_track(out, DW_SYS_SEND, 0);
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0);
}

/* Every traced system call's exit. */
SEC("tracepoint")
int dw_sys_exit(struct dw_sys_exit_args *ctx)
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
	if (call.op == DW_SYS_SEND)
		dw_on_send((const struct sock *)(unsigned long)call.sk, r, call.enter_ns, call.rcv_seq,
			   DW_SK_PROBED);
	else
		dw_on_recv((const struct sock *)(unsigned long)call.sk, r, call.flags, DW_SK_PROBED);
	return 0;
}
