// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TLS uprobes (issue 32): OpenSSL's API, attached per library file by
 * the discovery on the user side, never by the skeleton. Every program
 * here is named dw_ssl_*; autoload is off when TLS is off.
 *
 * A call's start and end are the calls themselves (SSL_write's entry,
 * SSL_read's return with bytes), and the session is the SSL pointer. Where
 * the discovery proves both API forms of a read (or a write) reach one inner
 * function, the _ex programs go there instead of on the wrappers (its first
 * instruction is emulated, theirs single-stepped: doc/tls.md). Of
 * the plaintext only an HTTP/2 session's frame headers are read, in the
 * kernel (bpf/tls/tlsh2.bpf.h); nothing of it leaves. Each entry marks the thread (ssl_threads)
 * for the TCP side to tie the session to its socket (bpf/tls/tlslink.bpf.h);
 * each return clears the mark and keeps it as the thread's last SSL call.
 *
 * On a tied session (tls_links), in the link's copy of the connection:
 * - outbound: a call starts when SSL_write begins with none outstanding
 *   (or, where the session was tied during that very write, when it
 *   began: the mark's start), and completes when SSL_read returns bytes;
 * - inbound: a request starts when SSL_read returns bytes with none
 *   outstanding, and completes when the answer's SSL_write begins.
 * The handshake (SSL_do_handshake, and whatever SSL_read and SSL_write do
 * of it inside), session tickets, close_notify (SSL_shutdown) and alerts
 * are no SSL_write and return no plaintext: no calls.
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
#include "h2/maps.bpf.h"
#include "h2/h2conn.bpf.h"
#include "h2/h2stream.bpf.h"
#include "tls/maps.bpf.h"
#include "tls/tlslink.bpf.h"
#include "tls/tlsclose.bpf.h"
#include "tls/tlsplain.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The thread's candidate connection (tls_rx_candidate()), if it read it
 * within DW_TLS_LATE_NS and this session is tied to nothing: the session's
 * link, and the socket's next send takes it over (tls_owner).
 */
/*
 * The syscalls backend's read-side tie (tls_sys_rx in bpf/tls/tlslink.bpf.h):
 * the socket the thread entered a receive on within DW_TLS_LATE_NS, a TLS
 * connection no session owns, gets this session, which is tied to nothing:
 * its link made here, and its own entry (conns_sk, by the socket's address)
 * marked owned, so that its next send and receive leave it to the
 * plaintext. A record-level call outstanding on it ends, no call.
 */
static __always_inline void ssl_take_sys_cand(__u64 id, __u64 ssl)
{
	struct dw_tls_key key = { .ssl = ssl, .tgid = id >> 32 };
	struct dw_tls_rx *r = bpf_map_lookup_elem(&tls_sys_rx, &id);
	struct dw_conn *c, *l;
	__u64 skey, now, at;

	if (!r)
		return;
	skey = r->sk;
	at = r->ns;
	now = bpf_ktime_get_ns();
	bpf_map_delete_elem(&tls_sys_rx, &id);
	if (now - at > DW_TLS_LATE_NS || bpf_map_lookup_elem(&tls_links, &key))
		return;
	c = bpf_map_lookup_elem(&conns_sk, &skey);
	if (!c || !c->tls.hello || c->tls.own == DW_TLS_OWNED)
		return;
	if (c->call_start_ns)
		call_end(c, OUTCOME_DROPPED, now);
	if (bpf_map_update_elem(&tls_links, &key, c, BPF_NOEXIST))
		return;
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (!l)
		return;
	tls_link_init(l);
	l->tls.ssl = ssl;
	l->tls.tgid = key.tgid;
	l->tls.sk = skey;
	l->tls.own = DW_TLS_OWNED;
	c->tls.ssl = ssl;
	c->tls.tgid = key.tgid;
	c->tls.sk = skey;
	c->tls.own = DW_TLS_OWNED;
	global_count(G_tls_linked);
	global_count(G_tls_linked_late);
}

static __always_inline void ssl_take_cand(__u64 id, __u64 ssl)
{
	struct dw_tls_key key = { .ssl = ssl, .tgid = id >> 32 };
	struct dw_conn *c, *l;
	__u64 skey;

	/* dw_backend is read-only: the verifier drops the branch not taken */
	if (dw_backend == DW_BACKEND_SYSCALLS) {
		ssl_take_sys_cand(id, ssl);
		return;
	}
	c = bpf_map_lookup_elem(&ssl_cands, &id);
	if (!c)
		return;
	skey = c->tls.sk;
	if (bpf_ktime_get_ns() - c->last_ns > DW_TLS_LATE_NS || bpf_map_lookup_elem(&tls_links, &key) ||
	    bpf_map_update_elem(&tls_links, &key, c, BPF_NOEXIST)) {
		bpf_map_delete_elem(&ssl_cands, &id);
		return;
	}
	bpf_map_delete_elem(&ssl_cands, &id);
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (!l)
		return;
	tls_link_init(l);
	l->tls.ssl = ssl;
	l->tls.tgid = key.tgid;
	l->tls.own = DW_TLS_OWNED;
	if (bpf_map_update_elem(&tls_owner, &skey, &key, BPF_ANY)) {
		bpf_map_delete_elem(&tls_links, &key);
		return;
	}
	global_count(G_tls_linked);
	global_count(G_tls_linked_late);
}

static __always_inline void ssl_enter(__u64 ssl, __u8 op, __u64 buf, __u32 len, __u64 len_at)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread t = { .ssl = ssl, .op = op, .inside = 1, .buf = buf, .len = len,
				   .len_at = len_at, .start_ns = bpf_ktime_get_ns() };

	ssl_take_cand(id, ssl);
	bpf_map_update_elem(&ssl_threads, &id, &t, BPF_ANY);
}

/* The thread's mark at a return: no longer inside, kept as its last call. */
static __always_inline struct dw_ssl_thread *ssl_leave(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread *t = bpf_map_lookup_elem(&ssl_threads, &id);

	if (!t || !t->inside)
		return 0;
	t->inside = 0;
	t->done_ns = bpf_ktime_get_ns();
	return t;
}

/*
 * What a call returned, in bytes: ret itself, or for the _ex forms (1: done) what they put at
 * len_at. OpenSSL's inner functions (where the discovery found them: user/logic/discovery/sslinner.h)
 * have the _ex forms' signature and return what the protocol's method does, > 0 when done.
 */
static __always_inline __u32 ssl_done_len(const struct dw_ssl_thread *t, int ret, bool ex)
{
	__u64 n = 0;

	if (!ex)
		return ret > 0 ? ret : 0;
	if (ret <= 0 || !t->len_at || bpf_probe_read_user(&n, sizeof(n), (const void *)t->len_at))
		return 0;
	return n > 0x7fffffff ? 0x7fffffff : n;
}

/*
 * A write begins: the thread is marked; the plaintext is looked at when it
 * returns (how much was written is known then), as of now.
 */
static __always_inline int on_write(__u64 ssl, __u64 buf, int num, __u64 len_at)
{
	global_count(G_tls_writes);
	ssl_enter(ssl, DW_SSL_WRITE, buf, num > 0 ? num : 0, len_at);
	return 0;
}

/*
 * The link's first plaintext bytes, either way: its destination counts a
 * connection timed from the plaintext (conns_tls). Here, in the uprobes,
 * not at the tie: the syscalls backend's exit programs have no room left.
 */
static __always_inline void tls_first_plain(struct dw_conn *l)
{
	struct dw_dest_stats *st;

	if (l->tls.tx || l->tls.rx)
		return;
	st = stats_of(l);
	if (st)
		st->conns_tls++;
}

/*
 * A write returns: its bytes, as of when it began, go to the stream layer
 * or start (answer) a call. Nothing of the answer can be read before the
 * write returns: OpenSSL serialises a session's calls.
 */
static __always_inline int on_write_ret(void *ctx, int ret, bool ex)
{
	struct dw_ssl_thread *t = ssl_leave();
	struct dw_tls_key key = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct dw_conn *l;
	__u32 n, seq;

	if (!t)
		return 0;
	key.ssl = t->ssl;
	l = bpf_map_lookup_elem(&tls_links, &key);
	if (!l)
		return 0;
	n = ssl_done_len(t, ret, ex);
	if (n)
		tls_first_plain(l);
	seq = l->tls.tx;
	l->tls.tx += n;
	if (n)
		tls_bytes(ctx, l, &key, H2_TX, t->buf, n, seq, t->start_ns);
	return 0;
}

static __always_inline int on_read_ret(void *ctx, int ret, bool ex)
{
	struct dw_ssl_thread *t = ssl_leave();
	struct dw_tls_key key = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct dw_conn *l;
	__u64 now;
	__u32 n, seq;

	if (!t)
		return 0;
	n = ssl_done_len(t, ret, ex);
	key.ssl = t->ssl;
	l = n ? bpf_map_lookup_elem(&tls_links, &key) : 0;
	if (!l)
		return 0;
	now = bpf_ktime_get_ns();
	tls_first_plain(l);
	seq = l->tls.rx;
	l->tls.rx += n;
	tls_bytes(ctx, l, &key, H2_RX, t->buf, n, seq, now);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_write, void *ssl, const void *buf, int num)
{
	return on_write((__u64)(unsigned long)ssl, (__u64)(unsigned long)buf, num, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ret, int ret)
{
	return on_write_ret(ctx, ret, false);
}

/* SSL_write_ex(ssl, buf, num, &written) returns 1 with written > 0 */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_write_ex, void *ssl, const void *buf, size_t num, size_t *written)
{
	return on_write((__u64)(unsigned long)ssl, (__u64)(unsigned long)buf,
			num > 0x7fffffff ? 0x7fffffff : (int)num, (__u64)(unsigned long)written);
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ex_ret, int ret)
{
	return on_write_ret(ctx, ret, true);
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_read, void *ssl, void *buf)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_READ, (__u64)(unsigned long)buf, 0, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ret, int ret)
{
	return on_read_ret(ctx, ret, false);
}

/* SSL_read_ex(ssl, buf, num, &readbytes) returns 1 with readbytes > 0 */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_read_ex, void *ssl, void *buf, size_t num, size_t *readbytes)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_READ, (__u64)(unsigned long)buf, 0,
		  (__u64)(unsigned long)readbytes);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ex_ret, int ret)
{
	return on_read_ret(ctx, ret, true);
}

/* The handshake's first send ties the session before any record-level call can start. */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_do_handshake, void *ssl)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_SHAKE, 0, 0, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_do_handshake_ret, int ret)
{
	ssl_leave();
	return 0;
}

/* The session is gone: its outstanding call was abandoned, and the link goes. */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_free, void *ssl)
{
	struct dw_tls_key key = { .ssl = (__u64)(unsigned long)ssl,
				  .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct dw_conn *l = bpf_map_lookup_elem(&tls_links, &key);

	if (l)
		tls_unlink(l, &key, OUTCOME_FAILED);
	return 0;
}
