// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TLS uprobes (issue 32): OpenSSL's API, attached per library file by
 * the discovery on the user side, never by the skeleton. Every program
 * here is named dw_ssl_*; autoload is off when TLS is off.
 *
 * Nothing of the plaintext is read: a call's start and end are the calls
 * themselves (SSL_write's entry, SSL_read's return with bytes), and the
 * session is the SSL pointer. Each entry marks the thread (ssl_threads)
 * for the TCP side to tie the session to its socket (bpf/tlslink.bpf.h);
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
#include "callmodel.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* 1 exactly when the user side attaches these programs (the TLS contract). */
const volatile __u32 dw_tls_on = 0;

static __always_inline void ssl_enter(__u64 ssl, __u8 op, __u64 rd_len)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct dw_ssl_thread t = { .ssl = ssl, .op = op, .inside = 1, .rd_len = rd_len,
				   .start_ns = bpf_ktime_get_ns() };

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

/* Plaintext is being written at now: an outbound call's start, an inbound request's answer. */
static __always_inline void tls_write_begins(struct dw_conn *l, __u64 now)
{
	struct dw_dest_stats *st;

	if (l->role == DW_ROLE_INBOUND) {
		if (l->call_start_ns)
			call_complete(l, now);
		row_process(l, bpf_get_current_pid_tgid() >> 32);
		return;
	}
	if (l->call_start_ns || *(volatile __u32 *)&l->closed)
		return;
	st = call_begin(l, now, 0, caller_of());
	if (!st)
		return;
	retry_check(l, st, now);
	/* the link went (TCP_CLOSE, SSL_free on another thread) as the call began: see outbound_start() */
	if (*(volatile __u32 *)&l->closed)
		call_end(l, OUTCOME_DROPPED, now);
}

/* Plaintext was read: an outbound call's answer, an inbound request. */
static __always_inline void tls_read_done(struct dw_conn *l, __u64 now)
{
	if (l->role == DW_ROLE_OUTBOUND) {
		if (l->call_start_ns)
			call_complete(l, now);
		return;
	}
	if (l->call_start_ns || *(volatile __u32 *)&l->closed)
		return;
	if (call_begin(l, now, 0, 0) && *(volatile __u32 *)&l->closed)
		call_end(l, OUTCOME_DROPPED, now);
}

static __always_inline int on_write(__u64 ssl)
{
	struct dw_conn *l;
	__u64 now;

	global_count(G_tls_writes);
	ssl_enter(ssl, DW_SSL_WRITE, 0);
	l = tls_link_of(ssl, bpf_get_current_pid_tgid() >> 32);
	if (!l)
		return 0;
	now = bpf_ktime_get_ns();
	tls_write_begins(l, now);
	return 0;
}

/* A write that tied its session: its call began when the write did. */
static __always_inline int on_write_ret(void)
{
	struct dw_ssl_thread *t = ssl_leave();
	struct dw_conn *l;

	if (!t || !t->linked_now)
		return 0;
	t->linked_now = 0;
	l = tls_link_of(t->ssl, bpf_get_current_pid_tgid() >> 32);
	if (l)
		tls_write_begins(l, t->start_ns);
	return 0;
}

static __always_inline int on_read_ret(bool got)
{
	struct dw_ssl_thread *t = ssl_leave();
	struct dw_conn *l;

	if (!t || !got)
		return 0;
	l = tls_link_of(t->ssl, bpf_get_current_pid_tgid() >> 32);
	if (l)
		tls_read_done(l, bpf_ktime_get_ns());
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_write, void *ssl)
{
	return on_write((__u64)(unsigned long)ssl);
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ret, int ret)
{
	return on_write_ret();
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_write_ex, void *ssl)
{
	return on_write((__u64)(unsigned long)ssl);
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ex_ret, int ret)
{
	return on_write_ret();
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_read, void *ssl)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_READ, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ret, int ret)
{
	return on_read_ret(ret > 0);
}

/* SSL_read_ex(ssl, buf, num, &readbytes) returns 1 with readbytes > 0 */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_read_ex, void *ssl)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_READ, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ex_ret, int ret)
{
	return on_read_ret(ret == 1);
}

/* The handshake's first send ties the session before any record-level call can start. */
SEC("uprobe")
int BPF_KPROBE(dw_ssl_do_handshake, void *ssl)
{
	ssl_enter((__u64)(unsigned long)ssl, DW_SSL_SHAKE, 0);
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
		tls_unlink(l, &key);
	return 0;
}
