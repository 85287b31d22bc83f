// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Go's crypto/tls (doc/go.md): uprobes at crypto/tls.(*Conn).Write's and Read's entries
 * that read the connection's socket fd through the Go version's struct offsets, and at
 * their RETs that read n, recorded per goroutine; then the same plaintext feed as
 * OpenSSL's (bpf/tls/tlsplain.bpf.h), the session being the *tls.Conn.
 *
 * The tie to the TCP connection is OpenSSL's (bpf/tls/tlslink.bpf.h): an entry marks its
 * thread (ssl_threads, op DW_SSL_GO) with the conn and the struct sock of its fd, and the
 * first send on that very socket inside a Write ties {conn, tgid} to it. The mark names
 * the socket because a thread runs many goroutines: a send for another goroutine's
 * connection (the marked one parked, or preempted) ties nothing. At a RET the mark goes.
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
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
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
#include "answer/outcome.bpf.h"
#include "layers/callend.bpf.h"
#include "answer/answer.bpf.h"
#include "answer/goodbye.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/go/maps.bpf.h"
#include "tls/tlslink.bpf.h"
#include "tls/tlsplain.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* x86's EFLAGS bits (arch/x86/include/uapi/asm/processor-flags.h; vmlinux.h has no macros) */
#define DW_EFLAGS_CF 0x0001
#define DW_EFLAGS_ZF 0x0040

/* The *tls.Conn -> fd chain: the fd, -1 for a closed conn, DW_GO_FD_UNREAD if a read faults. */
static __always_inline __s64 go_conn_fd(__u64 conn, const struct dw_go_layout *l)
{
	__u64 tcp = 0, nfd = 0;
	__s64 fd = -1;

	if (bpf_probe_read_user(&tcp, sizeof(tcp), (void *)(conn + l->conn_iface + 8)) || !tcp)
		return DW_GO_FD_UNREAD;
	if (bpf_probe_read_user(&nfd, sizeof(nfd), (void *)(tcp + l->conn_fd)) || !nfd)
		return DW_GO_FD_UNREAD;
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(nfd + l->pfd_sysfd)))
		return DW_GO_FD_UNREAD;
	/* a closed conn's -1 as it is; any other negative (no fd is) as unread */
	return fd < -1 ? DW_GO_FD_UNREAD : fd;
}

/* The struct sock of the current process's fd, as a key (never dereferenced): 0 if none. */
static __always_inline __u64 go_fd_sock(__s64 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = 0;
	struct socket *so;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return 0;
	so = BPF_CORE_READ(f, private_data);
	return so ? (__u64)(unsigned long)BPF_CORE_READ(so, sk) : 0;
}

/* The entry's thread mark for the TCP side's tie (tlslink.bpf.h's tls_sender). */
static __always_inline void go_mark(struct dw_go_gstate *s, __u64 id, __u64 now)
{
	struct dw_ssl_thread t = { .ssl = s->conn, .op = DW_SSL_GO, .inside = 1, .buf = s->buf,
				   .start_ns = now, .sk = s->sk };

	s->tid = id;
	s->start_ns = now;
	if (s->sk)
		bpf_map_update_elem(&ssl_threads, &id, &t, BPF_ANY);
}

/* At a RET: the entry's mark goes, if it is still this goroutine's (on whichever thread it was). */
static __always_inline void go_unmark(struct dw_go_gstate *s)
{
	__u64 id = s->tid;
	struct dw_ssl_thread *t = bpf_map_lookup_elem(&ssl_threads, &id);

	if (t && t->op == DW_SSL_GO && t->ssl == s->conn)
		bpf_map_delete_elem(&ssl_threads, &id);
}

/*
 * n bytes of plaintext, one way: to the session's link, if it is tied (this program
 * may end here, in the walker's tail call). False: not tied.
 */
static __always_inline bool go_plain_of(void *ctx, __u64 conn, __u64 buf, __u64 len, __u8 way, __u64 n, __u64 at)
{
	struct dw_tls_key key = { .ssl = conn, .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct dw_conn *l;
	__u32 seq;

	if (!n || n > len || n > 0x7fffffff)
		return false;
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (!l)
		return false;
	if (way == H2_TX) {
		seq = l->tls.tx;
		l->tls.tx += n;
	} else {
		seq = l->tls.rx;
		l->tls.rx += n;
	}
	tls_bytes(ctx, l, &key, way, buf, (__u32)n, seq, at);
	return true;
}

static __always_inline bool go_plain(void *ctx, struct dw_go_gstate *s, __u8 way, __u64 n, __u64 at)
{
	return go_plain_of(ctx, s->conn, s->buf, s->len, way, n, at);
}

/* Write's or Read's entry: the goroutine's state with the conn's fd, created if new. */
static __always_inline struct dw_go_gstate *go_enter(struct pt_regs *ctx)
{
	__u32 idx = DW_GO_CK_LAYOUT(bpf_get_attach_cookie(ctx));
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
	s->buf = ctx->bx;
	s->len = ctx->cx;
	s->fd = go_conn_fd(s->conn, l);
	s->sk = 0;
	if (s->fd == DW_GO_FD_UNREAD)
		global_count(G_go_tls_fd_unread);
	else if (s->fd >= 0)
		s->sk = go_fd_sock(s->fd);
	go_mark(s, bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
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

/*
 * crypto/tls.(*Conn).handshakeContext's entry (no RET probed): the thread is marked with the
 * conn and its socket, so that the handshake's first send (the ClientHello, sent before the
 * goroutine can park) ties the session, before any record-level call starts; and the socket
 * names the session (tls_go_owner), so that a server's ServerHello, sent by the goroutine
 * after it parked for the ClientHello and resumed on another thread, ties it too. Without
 * that, the server's session tied at its first Write's send, and a Read of the client's
 * HTTP/2 preface before it left the plaintext's stream layer with no preface (1 run in 6:
 * record-level calls, 203-274 of 400 requests). The goroutine's
 * state is not touched: a Write or Read may be under it (they handshake first). The mark
 * stays until the thread's next Go entry or RET replaces or removes it; it names its socket,
 * so a stale one ties nothing else.
 */
SEC("uprobe")
int dw_go_tls_handshake(struct pt_regs *ctx)
{
	__u32 idx = DW_GO_CK_LAYOUT(bpf_get_attach_cookie(ctx));
	const struct dw_go_layout *l = bpf_map_lookup_elem(&go_layouts, &idx);
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread t = { .ssl = ctx->ax, .op = DW_SSL_GO, .inside = 1 };
	__s64 fd;

	if (!l || !l->valid)
		return 0;
	fd = go_conn_fd(ctx->ax, l);
	t.sk = fd < 0 ? 0 : go_fd_sock(fd);
	t.start_ns = bpf_ktime_get_ns();
	if (!t.sk || tls_link_of(t.ssl, id >> 32))
		return 0;
	bpf_map_update_elem(&ssl_threads, &id, &t, BPF_ANY);
	/* the goroutine may park (a server waits for the ClientHello) and send from another thread */
	bpf_map_update_elem(&tls_go_owner, &t.sk, &(struct dw_tls_key){ .ssl = t.ssl, .tgid = id >> 32 },
			    BPF_ANY);
	if (!*(volatile __u32 *)&dw_go_owners)
		dw_go_owners = 1;
	return 0;
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
	/*
	 * A tied session's request goes to the call model at Write's entry, all of it (Write
	 * writes it all or fails): at its RET, the answer could already have been read by the
	 * reading goroutine on another CPU (net/http's readLoop), and the call would start
	 * after its end. Callers serialise Write (net/http's writeLoop, HTTP/2's write mutex),
	 * so the stream layer sees the bytes in order. Not tied yet (the first Write ties it,
	 * in its send): at the RET.
	 */
	s->tx_fed = 0;
	if (s->len && bpf_map_lookup_elem(&tls_links, &(struct dw_tls_key){ .ssl = s->conn,
			.tgid = bpf_get_current_pid_tgid() >> 32 })) {
		s->tx_fed = 1;
		go_plain(ctx, s, H2_TX, s->len, s->start_ns);
	}
	return 0;
}

/* Write's return with n bytes written, at a RET or at its deferred closure. */
static __always_inline int go_write_done(struct pt_regs *ctx, __u64 n)
{
	struct dw_go_gstate *s = go_leave(ctx);

	if (!s)
		return 0;
	s->returns++;
	s->in_write = 0;
	/* n <= len on every path; a wild n (a RET or a slot we misplaced) would show as bytes over */
	s->bytes_written += n;
	go_unmark(s);
	/* the Write that tied the session: its bytes, as of its entry */
	if (!s->tx_fed)
		go_plain(ctx, s, H2_TX, n, s->start_ns);
	return 0;
}

/* At each RET of crypto/tls.(*Conn).Write: n in RAX. */
SEC("uprobe")
int dw_go_tls_write_ret(struct pt_regs *ctx)
{
	return go_write_done(ctx, ctx->ax);
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

/* Read's return with n bytes, at a RET or at its deferred closure. */
static __always_inline int go_read_done(struct pt_regs *ctx, __u64 n)
{
	struct dw_go_gstate *s = go_leave(ctx);

	if (!s)
		return 0;
	s->read_returns++;
	s->in_read = 0;
	s->bytes_read += n;
	go_unmark(s);
	go_plain(ctx, s, H2_RX, n, bpf_ktime_get_ns());
	return 0;
}

/* At each RET of crypto/tls.(*Conn).Read: n in RAX (0 with an error, at EOF among them). */
SEC("uprobe")
int dw_go_tls_read_ret(struct pt_regs *ctx)
{
	return go_read_done(ctx, ctx->ax);
}

/*
 * The return on each exit past F's defers (Read's `defer c.in.Unlock()`; user/logic/discovery/godefer.h):
 * at the deferred closure's stack check, which the kernel emulates where a RET is single-stepped.
 * F's frame is 8 bytes above (the return address), n at the cookie's result offset in it. Only
 * for a call from F's own code (the return address inside it: not the runtime's panic or
 * deferreturn), and not when the check is about to grow the stack: CF or ZF from the CMP against
 * the stack guard take the JLS to runtime.morestack, and the closure comes here again after it.
 */
static __always_inline int go_defer_n(struct pt_regs *ctx, __u64 *n)
{
	__u64 ck = bpf_get_attach_cookie(ctx), ret = 0;
	__s64 at;

	if (ctx->flags & (DW_EFLAGS_CF | DW_EFLAGS_ZF))
		return -1;
	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)ctx->sp))
		return -1;
	at = (__s64)(ret - ctx->ip) - DW_GO_CK_LO(ck);
	if (at <= 0 || at >= DW_GO_CK_SIZE(ck))
		return -1;
	if (bpf_probe_read_user(n, sizeof(*n), (void *)(ctx->sp + 8 + DW_GO_CK_RESULT(ck)))) {
		global_count(G_go_tls_ret_unread);
		return -1;
	}
	return 0;
}

SEC("uprobe")
int dw_go_tls_read_defer(struct pt_regs *ctx)
{
	__u64 n = 0;

	return go_defer_n(ctx, &n) ? 0 : go_read_done(ctx, n);
}

/*
 * Read seen at its return alone, where the finder proved it keeps its arguments in its frame
 * (user/logic/discovery/godefer.h's dw_go_find_arg_spill: Go 1.19 spills RAX, RBX, RCX at once and
 * never writes them again): the *Conn, the buffer and its length read there with n, and no entry
 * probe (3 hits a HTTP/1.1 request fewer). Its exits before the defer (a failed handshake, a
 * zero-length buffer) return nothing and are not probed. No thread mark: a Read ties nothing (the
 * handshake and Write's sends do).
 */
SEC("uprobe")
int dw_go_tls_read_done(struct pt_regs *ctx)
{
	__u64 ck = bpf_get_attach_cookie(ctx), n = 0, args[3] = {};

	if (go_defer_n(ctx, &n))
		return 0;
	global_count(G_go_tls_reads);
	if (bpf_probe_read_user(args, sizeof(args), (void *)(ctx->sp + 8 + DW_GO_CK_SPILL(ck)))) {
		global_count(G_go_tls_ret_unread);
		return 0;
	}
	go_plain_of(ctx, args[0], args[1], args[2], H2_RX, n, bpf_ktime_get_ns());
	return 0;
}

/* The same for Write's exits past its `defer c.out.Unlock()` (its first closure call there). */
SEC("uprobe")
int dw_go_tls_write_defer(struct pt_regs *ctx)
{
	__u64 n = 0;

	return go_defer_n(ctx, &n) ? 0 : go_write_done(ctx, n);
}
