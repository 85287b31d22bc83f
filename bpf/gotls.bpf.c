// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Go's crypto/tls (doc/go.md), first step: uprobes at crypto/tls.(*Conn).Write's and
 * Read's entries that read the connection's socket fd through the Go version's struct
 * offsets, and at their RETs that read n, recorded per goroutine. It shows that the offsets the finder (user/golang/goprobe.c)
 * gives are right on the running program; the call model on Go's plaintext builds on it.
 *
 * Go's register ABI (1.17+, amd64): the *tls.Conn in RAX, the slice in RBX (pointer) and
 * RCX (length), the goroutine's g in R14. The return is taken at each RET instruction
 * (dw_go_tls_write_ret, dw_go_tls_read_ret: one uprobe per RET the finder listed): a uretprobe would put
 * its trampoline's address on the goroutine's stack, which Go moves when it grows.
 * At a RET, n is in RAX and R14 still holds g (a fixed register in Go's ABI). Attached per ELF file by the discovery with the layout's index as
 * the attach cookie (bpf_get_attach_cookie, Linux 5.15+); never by the skeleton
 * (the loader turns its autoload off until the discovery attaches it).
 *
 * Cost: an entry is one array lookup, three user reads, one LRU hash lookup (an insert for a
 * new goroutine); a RET one hash lookup: O(1).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "conn.bpf.h"
#include "gotls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The *tls.Conn -> fd chain; a read that faults (a conn over no net.conn) leaves fd -1. */
static __always_inline __s64 go_conn_fd(__u64 conn, const struct dw_go_layout *l)
{
	__u64 tcp = 0, nfd = 0;
	__s64 fd = -1;

	if (bpf_probe_read_user(&tcp, sizeof(tcp), (void *)(conn + l->conn_iface + 8)) || !tcp)
		return -1;
	if (bpf_probe_read_user(&nfd, sizeof(nfd), (void *)(tcp + l->conn_fd)) || !nfd)
		return -1;
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(nfd + l->pfd_sysfd)))
		return -1;
	return fd;
}

/* Write's or Read's entry: the goroutine's state with the conn's fd, created if new. */
static __always_inline struct dw_go_gstate *go_enter(struct pt_regs *ctx)
{
	__u32 idx = (__u32)bpf_get_attach_cookie(ctx);
	const struct dw_go_layout *l = bpf_map_lookup_elem(&go_layouts, &idx);
	struct dw_go_gkey k = {};
	struct dw_go_gstate *s, ns = {};

	if (!l || !l->valid)
		return NULL;
	k.tgid = bpf_get_current_pid_tgid() >> 32;
	k.g = ctx->r14;
	s = bpf_map_lookup_elem(&go_goroutines, &k);
	if (!s) {
		bpf_map_update_elem(&go_goroutines, &k, &ns, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&go_goroutines, &k);
		if (!s)
			return NULL;
	}
	s->conn = ctx->ax;
	s->len = ctx->cx;
	s->fd = go_conn_fd(s->conn, l);
	if (s->fd < 0)
		global_count(G_go_tls_fd_unread);
	return s;
}

/* At a RET: the same goroutine's state (R14 is still its g), or NULL. */
static __always_inline struct dw_go_gstate *go_leave(struct pt_regs *ctx)
{
	struct dw_go_gkey k = {};

	k.tgid = bpf_get_current_pid_tgid() >> 32;
	k.g = ctx->r14;
	return bpf_map_lookup_elem(&go_goroutines, &k);
}

SEC("uprobe")
int dw_go_tls_write(struct pt_regs *ctx)
{
	struct dw_go_gstate *s;

	global_count(G_go_tls_writes);
	s = go_enter(ctx);
	if (!s)
		return 0;
	s->writes++;
	if (s->in_write) {
		s->write_repeats++;
		return 0;
	}
	s->in_write = 1;
	s->bytes_asked += s->len;
	s->write_len = s->len;
	return 0;
}

/* At each RET of crypto/tls.(*Conn).Write: n in RAX. */
SEC("uprobe")
int dw_go_tls_write_ret(struct pt_regs *ctx)
{
	struct dw_go_gstate *s = go_leave(ctx);

	if (!s)
		return 0;
	s->returns++;
	s->in_write = 0;
	/* n <= len on every path; a wild RAX (a RET we misplaced) would show as bytes over */
	s->bytes_written += ctx->ax;
	return 0;
}

SEC("uprobe")
int dw_go_tls_read(struct pt_regs *ctx)
{
	struct dw_go_gstate *s;

	global_count(G_go_tls_reads);
	s = go_enter(ctx);
	if (!s)
		return 0;
	s->reads++;
	if (s->in_read)
		s->read_repeats++;
	s->in_read = 1;
	return 0;
}

/* At each RET of crypto/tls.(*Conn).Read: n in RAX (0 with an error, at EOF among them). */
SEC("uprobe")
int dw_go_tls_read_ret(struct pt_regs *ctx)
{
	struct dw_go_gstate *s = go_leave(ctx);

	if (!s)
		return 0;
	s->read_returns++;
	s->in_read = 0;
	s->bytes_read += ctx->ax;
	return 0;
}
