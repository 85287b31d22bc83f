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
 * and one failed lookup at exit. The socket goes to the backend's events,
 * core/sysmodel.bpf.h: for a tracked socket the entry
 * (dw_on_sys_enter()) remembers it per thread (sys_calls, keyed by
 * pid_tgid), and for a send when it began; the exit (dw_on_sys_exit()),
 * with the system call's result, hands it to dw_on_send() or dw_on_recv().
 * Resolving at entry names the socket the call works on: the system call
 * holds its file until it returns, while the descriptor may be closed and
 * reused by another thread meanwhile.
 *
 * There is no sk_data_ready here: a call completes at the first successful
 * receive, so a caller that reads late makes its dependency look slower.
 * Classic tracepoint programs may not use socket storage, which is why this
 * backend keeps per-connection state in conns_sk (see callmodel.bpf.h).
 *
 * One entry program serves every system call that passes the descriptor,
 * the flags and the bytes at the same places, one exit program each
 * direction; the loader attaches them, see dw_syscall_specs in
 * user/kernel/hooks.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
/* no room for the TLS read-side tie here (bpf/tls/tlslink.bpf.h, tls_owner_of()) */
#define DW_TLS_NO_OWNER 1
/* the transport: its maps, a connection (and the seam's questions of it), its socket, slots, calls, where bytes are */
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "layers/conn.bpf.h"
#include "core/sockread.bpf.h"
#include "core/slots.bpf.h"
#include "core/count.bpf.h"
#include "core/call.bpf.h"
#include "core/cascade.bpf.h"
#include "core/bytes.bpf.h"
#include "core/readend.bpf.h"
/* the layers: answers and goodbyes, HTTP/2 streams, TLS sessions */
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "answer/goodbye.bpf.h"
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2detect.bpf.h"
#include "h2/h2stream.bpf.h"
#include "h2/hblock.bpf.h"
#include "h2/h2walk.bpf.h"
#include "h2/streams.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
/* the seam, then the events */
#include "layers/bytes.bpf.h"
#include "layers/sys.bpf.h"
#include "core/callmodel.bpf.h"
#include "core/sysmodel.bpf.h"
/* DNS: a datagram socket's sends and receives (issue 46) */
#include "dns/maps.bpf.h"
#include "dns/dnscall.bpf.h"
#include "dns/dnsuser.bpf.h"
#include "dns/dnssys.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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
 * a socket; *type, its type (SOCK_STREAM, SOCK_DGRAM, ...). task -> files ->
 * fdt are direct (fault-safe) loads through the BTF-typed current task; the
 * descriptor's slot, the file and what hangs off it are probe reads: three
 * for a file that is not a socket, five for one that is. The socket's type
 * comes in the same read as its sock (issue 46): what a TCP socket pays for
 * DNS is the compare in sys_enter_dns().
 */
static __always_inline const struct sock *sys_sock_of_fd(__u64 fd_arg, __u16 *type)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	__u32 t_off = bpf_core_field_offset(struct socket, type) & ~7u;	/* the read starts 8-aligned */
	__u32 sk_off = bpf_core_field_offset(struct socket, sk);
	int fd = (int)fd_arg;
	struct file **fds, *file;
	struct socket *sock;
	__u64 span[4];
	umode_t mode;

	*type = 0;
	if (fd < 0 || !fdt || (unsigned int)fd >= fdt->max_fds)
		return 0;
	fds = fdt->fd;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return 0;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	if ((mode & DW_S_IFMT) != DW_S_IFSOCK)
		return 0;
	sock = BPF_CORE_READ(file, private_data);
	/* struct socket: state, type, flags, file, sk (Linux 6.1 to 6.18): 32 bytes from its start */
	if (sk_off <= t_off || (sk_off & 7) || sk_off + 8 - t_off > sizeof(span)) {
		*type = BPF_CORE_READ(sock, type);
		return BPF_CORE_READ(sock, sk);
	}
	if (bpf_probe_read_kernel(span, sk_off + 8 - t_off, (const char *)sock + t_off))
		return 0;
	*type = *(__u16 *)((__u8 *)span + (bpf_core_field_offset(struct socket, type) - t_off));
	return (const struct sock *)span[(sk_off - t_off) / 8];
}

/*
 * A system call's entry on descriptor fd: a datagram socket's goes to DNS
 * (dns/dnssys.bpf.h: d, where its message and address are), never to the
 * call model, which tracks TCP only; anything else to the call model.
 */
static __always_inline int sys_enter_dns(__u64 fd, __u32 op, __u64 flags, int kind, __u64 arg, __u64 nseg,
					 const struct dns_sys_call *d)
{
	__u16 type;
	const struct sock *sk = sys_sock_of_fd(fd, &type);

	if (type == SOCK_DGRAM)
		return dns_sys_enter(sk, d);
	return dw_on_sys_enter(sk, op, flags, kind, arg, nseg);
}

static __always_inline int sys_enter(__u64 fd, __u32 op, __u64 flags, int kind, __u64 arg, __u64 nseg)
{
	struct dns_sys_call d = {
		.kind = kind == SYS_BUF ? DNS_BUF : kind == SYS_IOV ? DNS_IOV : kind == SYS_MSG ? DNS_MSG : 0,
		.arg = arg, .len = nseg, .send = op == DW_SYS_SEND,
	};

	return sys_enter_dns(fd, op, flags, kind, arg, nseg, &d);
}

/* sendfile64: bytes the stream layer does not read */
SEC("tracepoint")
int dw_sys_enter_send(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_NOBUF, 0, 0);
}

/* sendmmsg(fd, msgvec, vlen, flags): its messages are DNS's only (glibc's A and AAAA) */
SEC("tracepoint")
int dw_sys_enter_sendmmsg(struct dw_sys_enter_args *ctx)
{
	struct dns_sys_call d = { .kind = DNS_MMSG, .arg = ctx->args[1], .len = ctx->args[2], .send = 1 };

	return sys_enter_dns(ctx->args[0], DW_SYS_SEND, 0, SYS_NOBUF, 0, 0, &d);
}

/* write(fd, buf, count): the count in nseg's place (a goodbye's length) */
SEC("tracepoint")
int dw_sys_enter_send_buf(struct dw_sys_enter_args *ctx)
{
	return sys_enter(ctx->args[0], DW_SYS_SEND, 0, SYS_BUF, ctx->args[1], ctx->args[2]);
}

/* sendto(fd, buf, len, flags, dest_addr, addrlen): write's, and an address for DNS */
SEC("tracepoint")
int dw_sys_enter_sendto(struct dw_sys_enter_args *ctx)
{
	struct dns_sys_call d = { .kind = DNS_BUF, .arg = ctx->args[1], .len = ctx->args[2], .name = ctx->args[4],
				  .namelen = ctx->args[5], .send = 1 };

	return sys_enter_dns(ctx->args[0], DW_SYS_SEND, 0, SYS_BUF, ctx->args[1], ctx->args[2], &d);
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

/* recvfrom(fd, buf, len, flags, src_addr, addrlen): for DNS, the sender's address and where its length is */
SEC("tracepoint")
int dw_sys_enter_recvfrom(struct dw_sys_enter_args *ctx)
{
	struct dns_sys_call d = { .kind = DNS_BUF, .arg = ctx->args[1], .name = ctx->args[4],
				  .namelen = ctx->args[5] };

	return sys_enter_dns(ctx->args[0], DW_SYS_RECV, ctx->args[3], SYS_BUF, ctx->args[1], 0, &d);
}

/* recvmmsg(fd, msgs, vlen, flags, timeout): bytes the stream layer does not read; DNS's answers */
SEC("tracepoint")
int dw_sys_enter_recv_flags3(struct dw_sys_enter_args *ctx)
{
	struct dns_sys_call d = { .kind = DNS_MMSG, .arg = ctx->args[1], .len = ctx->args[2] };

	return sys_enter_dns(ctx->args[0], DW_SYS_RECV, ctx->args[3], SYS_NOBUF, 0, 0, &d);
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
	__u16 type;
	const struct sock *out = sys_sock_of_fd(ctx->args[2], &type);

	if (out)
		return dw_on_sys_enter(out, DW_SYS_SEND, 0, SYS_NOBUF, 0, 0);
	return sys_enter(ctx->args[0], DW_SYS_RECV, 0, SYS_NOBUF, 0, 0);
}

/* A send's exit: DNS's (a query read once the kernel took it), else the call model's. */
SEC("tracepoint")
int dw_sys_exit_send(struct dw_sys_exit_args *ctx)
{
	if (dns_sys_exit(ctx->ret, true))
		return 0;
	return dw_on_sys_exit(ctx->ret, DW_SYS_SEND);
}

SEC("tracepoint")
int dw_sys_exit_recv(struct dw_sys_exit_args *ctx)
{
	if (dns_sys_exit(ctx->ret, false))
		return 0;
	return dw_on_sys_exit(ctx->ret, DW_SYS_RECV);
}

/* splice's exit */
SEC("tracepoint")
int dw_sys_exit(struct dw_sys_exit_args *ctx)
{
	return dw_on_sys_exit(ctx->ret, 0);
}
