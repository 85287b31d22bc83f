// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Go's crypto/tls (doc/go.md), first step: a uprobe at crypto/tls.(*Conn).Write's entry
 * that reads the connection's socket fd through the Go version's struct offsets and
 * records it per goroutine. It shows that the offsets the finder (user/golang/goprobe.c)
 * gives are right on the running program; the call model on Go's plaintext builds on it.
 *
 * Go's register ABI (1.17+, amd64): the *tls.Conn in RAX, the slice in RBX (pointer) and
 * RCX (length), the goroutine's g in R14. The return is taken at each RET instruction
 * (dw_go_tls_write_ret, one uprobe per RET the finder listed): a uretprobe would put
 * its trampoline's address on the goroutine's stack, which Go moves when it grows.
 * At a RET, n is in RAX and R14 still holds g (a fixed register in Go's ABI). Attached per ELF file by the discovery with the layout's index as
 * the attach cookie (bpf_get_attach_cookie, Linux 5.15+); never by the skeleton
 * (the loader turns its autoload off until the discovery attaches it).
 *
 * Cost: one array lookup, three user reads, one LRU hash update: O(1).
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

SEC("uprobe")
int dw_go_tls_write(struct pt_regs *ctx)
{
	__u32 idx = (__u32)bpf_get_attach_cookie(ctx);
	const struct dw_go_layout *l;
	struct dw_go_gkey k = {};
	struct dw_go_gstate *s, ns = {};

	global_count(G_go_tls_writes);
	l = bpf_map_lookup_elem(&go_layouts, &idx);
	if (!l || !l->valid)
		return 0;
	k.tgid = bpf_get_current_pid_tgid() >> 32;
	k.g = ctx->r14;
	ns.conn = ctx->ax;
	ns.len = ctx->cx;
	ns.fd = go_conn_fd(ns.conn, l);
	if (ns.fd < 0)
		global_count(G_go_tls_fd_unread);
	s = bpf_map_lookup_elem(&go_goroutines, &k);
	if (s) {
		s->fd = ns.fd;
		s->conn = ns.conn;
		s->len = ns.len;
		s->writes++;
		s->bytes_asked += ns.len;
		return 0;
	}
	ns.writes = 1;
	ns.bytes_asked = ns.len;
	bpf_map_update_elem(&go_goroutines, &k, &ns, BPF_ANY);
	return 0;
}

/* At each RET of crypto/tls.(*Conn).Write: n in RAX, the same goroutine's g in R14. */
SEC("uprobe")
int dw_go_tls_write_ret(struct pt_regs *ctx)
{
	struct dw_go_gkey k = {};
	struct dw_go_gstate *s;

	k.tgid = bpf_get_current_pid_tgid() >> 32;
	k.g = ctx->r14;
	s = bpf_map_lookup_elem(&go_goroutines, &k);
	if (!s)
		return 0;
	s->returns++;
	/* n <= len on every path; a wild RAX (a RET we misplaced) would show as bytes over */
	s->bytes_written += ctx->ax;
	return 0;
}
