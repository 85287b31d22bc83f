/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Recognising a connection: a direction's first bytes are looked at once.
 * The client's connection preface or a server's first SETTINGS makes the
 * connection's HTTP/2 state; a TLS hello (tls.h) leaves the connection to
 * the transport model, multiplexed where its ALPN says HTTP/2 for sure;
 * anything else is NEVER.
 *
 * Needs, included before it: h2/h2conn.bpf.h.
 */
#ifndef DEPWATCH_H2DETECT_BPF_H
#define DEPWATCH_H2DETECT_BPF_H

#include "tls/hello.h"

/* TLS hellos (bpf/tls/hello.h) are read from an event's first piece: user memory, or the skb. */
struct tls_src {
	__u64 at;		/* user address of the first byte */
	__u32 len;		/* bytes there */
	__u32 off;		/* the skb: offset of the first byte */
	struct bpf_dynptr *skb;
};

static __always_inline int tls_read(const struct tls_src *t, __u32 off, __u8 *dst, __u32 n, bool from_skb)
{
	if (off > t->len || n > t->len - off)
		return -1;
	if (from_skb)
		return bpf_dynptr_read(dst, n, t->skb, t->off + off, 0) ? -1 : 0;
	return bpf_probe_read_user(dst, n, (const void *)(t->at + off)) ? -1 : 0;
}

/* A hello's scan, one read a step (bpf_loop's context). */
struct tls_walk {
	const struct tls_src *t;
	struct dw_tls_scan s;
};

static __always_inline long tls_step(struct tls_walk *w, bool from_skb)
{
	__u32 off, n;
	__u8 b[16];

	if (!dw_tls_need(&w->s, &off, &n))
		return 1;
	/* at most 8: the mask tells the verifier */
	n &= 15;
	if (tls_read(w->t, off, b, n, from_skb))
		return 1;
	dw_tls_took(&w->s, b);
	return 0;
}

/* Unused is no error: a program that walks only TLS's plaintext (tls/walk.bpf.c) reads no hello. */
static __attribute__((unused)) long tls_step_user(__u32 i, void *ctx)
{
	return tls_step(ctx, false);
}

static __attribute__((unused)) long tls_step_skb(__u32 i, void *ctx)
{
	return tls_step(ctx, true);
}

/* What a hello offers or chose (tls.h), read step by step from where it is. */
static __always_inline __u32 tls_alpn(const struct tls_src *t, bool from_skb)
{
	struct tls_walk w = { .t = t };

	dw_tls_start(&w.s, t->len);
	bpf_loop(DW_TLS_MAX_STEPS, from_skb ? tls_step_skb : tls_step_user, &w, 0);
	return w.s.found;
}

/* The first (up to 9) bytes of an event, into buf (16 bytes); how many. */
static __always_inline __u32 first_bytes(const struct h2_bytes *b, struct bpf_dynptr *skb, __u8 *buf,
					 bool from_skb)
{
	__u64 at = b->addr + b->off;
	__u32 n = b->len < 9 ? b->len : 9;
	struct iovec v;

	if (!from_skb && b->kind != H2_SRC_USER) {
		if (!b->nseg)
			return 0;
		if (b->kind == H2_SRC_IOV_KERNEL ? bpf_probe_read_kernel(&v, sizeof(v), (void *)b->addr) :
						   bpf_probe_read_user(&v, sizeof(v), (void *)b->addr))
			return 0;
		at = (__u64)(unsigned long)v.iov_base + b->off;
		if (v.iov_len - b->off < n)
			n = v.iov_len - b->off;
	}
	/* n <= 9: the mask says so to the verifier, which the compiler would otherwise drop */
	barrier_var(n);
	n &= 15;
	if (from_skb)
		return bpf_dynptr_read(buf, n, skb, b->off, 0) ? 0 : n;
	return bpf_probe_read_user(buf, n, (void *)at) ? 0 : n;
}

/*
 * Whether a direction's first bytes can be HTTP/2's: the client's the
 * preface, the server's a SETTINGS frame (not an ACK, on stream 0, a
 * multiple of 6 long). Only as many bytes as the event has are compared.
 */
static __always_inline bool first_bytes_h2(const __u8 *buf, __u32 n, __u8 side)
{
	if (!n)
		return false;
	if (side == DW_H2_CLIENT) {
		for (__u32 i = 0; i < 9; i++)
			if (i < n && buf[i] != dw_h2_preface_byte(i))
				return false;
		return true;
	}
	if (n >= 3 && ((__u32)buf[0] << 16 | (__u32)buf[1] << 8 | buf[2]) % 6)
		return false;
	if (n >= 4 && buf[3] != DW_H2_SETTINGS)
		return false;
	if (n >= 5 && buf[4] != 0)
		return false;
	for (__u32 i = 5; i < 9; i++)
		if (i < n && buf[i])
			return false;
	return true;
}

/*
 * The connection's state, made at its first HTTP/2 bytes: this direction's
 * walker at seq, the other's where its next byte will be.
 */
static __always_inline struct dw_h2_conn *h2_start(const struct sock *sk, struct dw_conn *conn,
						   enum h2_way way, __u32 seq, __u8 side)
{
	struct dw_h2_conn *h2 = h2_create(sk);
	__u32 other_seq;

	if (!h2) {
		global_count(G_h2_state_full);
		conn->h2.state = DW_H2_NEVER;
		conn_mark_multiplexed(conn);
		return 0;
	}
	__sync_fetch_and_add(&dw_h2_live, 1);
	conn->h2.state = DW_H2_MAYBE;
	if (way == H2_TX) {
		other_seq = BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);
		dw_h2_dir_init(&h2->tx, seq, side);
		dw_h2_dir_init(&h2->rx, other_seq, !side);
	} else {
		other_seq = BPF_CORE_READ((const struct tcp_sock *)sk, write_seq);
		dw_h2_dir_init(&h2->rx, seq, side);
		dw_h2_dir_init(&h2->tx, other_seq, !side);
	}
	h2->newest = 0;
	return h2;
}

/* The whole preface came: the connection is h2c. */
static __always_inline void h2_on(struct dw_conn *conn, __u64 now)
{
	struct dw_dest_stats *st = stats_of(conn);

	conn->h2.state = DW_H2_ON;
	if (st)
		st->conns_h2++;
	/* inbound, the sock backend: the transport model started a request at the preface's arrival */
	if (conn->call_start_ns)
		call_end(conn, OUTCOME_DROPPED, now);
}

/* Where an event's first piece is, for the TLS hello reader. */
static __always_inline void tls_src_of(const struct h2_bytes *b, struct bpf_dynptr *skb, struct tls_src *t,
				       bool from_skb)
{
	struct iovec v;

	t->skb = from_skb ? skb : 0;
	t->off = b->off;
	t->len = b->len;
	t->at = b->addr + b->off;
	if (from_skb || b->kind == H2_SRC_USER)
		return;
	t->len = 0;
	if (!b->nseg || (b->kind == H2_SRC_IOV_KERNEL ? bpf_probe_read_kernel(&v, sizeof(v), (void *)b->addr) :
							bpf_probe_read_user(&v, sizeof(v), (void *)b->addr)))
		return;
	t->at = (__u64)(unsigned long)v.iov_base + b->off;
	t->len = v.iov_len > b->off ? v.iov_len - b->off : 0;
	if (t->len > b->len)
		t->len = b->len;
}

/*
 * A TLS hello: the connection stays the transport model's, multiplexed if
 * the hello says it speaks HTTP/2 (bpf/tls/hello.h); the server's hello is still
 * to be read if the client's left it open (TLS 1.2 names the choice).
 */
static __always_inline void tls_first(struct dw_conn *conn, const struct h2_bytes *b, struct bpf_dynptr *skb,
				      __u8 side, bool from_skb)
{
	struct tls_src t;
	__u32 alpn;

	tls_src_of(b, skb, &t, from_skb);
	alpn = tls_alpn(&t, from_skb);
	conn->h2.state = DW_H2_NEVER;
	/*
	 * A server's OpenSSL reads a record's 5-byte header alone first: a
	 * handshake record's header (the caller saw 0x16 3) is TLS too, its
	 * ALPN unread (the hello's body comes in the next read).
	 */
	if (!alpn && t.len != 5)
		return;
	conn->tls.hello = 1;
	if (!conn->tls.live) {
		conn->tls.live = 1;
		__sync_fetch_and_add(&dw_tls_live, 1);
	}
	if (dw_tls_h2_only(alpn, side == DW_H2_SERVER))
		conn_mark_multiplexed(conn);
	else if (side == DW_H2_CLIENT && (alpn & DW_ALPN_H2))
		conn->h2.state = DW_H2_TLS;
}

/*
 * Sends looked at for a TLS hello on a connection that began in plaintext:
 * protocols that upgrade in place send theirs a few exchanges in
 * (PostgreSQL after its 8-byte SSLRequest and the server's 'S': the
 * client's 2nd send, the server's 2nd; MySQL and MariaDB after the
 * greeting and the client's SSL request; SMTP, IMAP and POP3 after
 * STARTTLS, up to the server's 4th). The libraries that speak them (libpq,
 * libmysqlclient, MariaDB Connector/C) send the hello from inside
 * SSL_connect or SSL_do_handshake like any other, through a BIO of their
 * own over the socket: the send is what ties the session (tlslink.bpf.h),
 * once the connection is known to be TLS. Six: a hello later than that is
 * not looked for, and its connection stays cleartext (its records count as
 * calls, as before issue 48).
 */
#define DW_TLS_LOOKS 6

/*
 * A direction's first bytes: HTTP/2's (its state made if need be), a TLS
 * hello (tls_first), or neither (NEVER). On a NEVER connection with sends
 * left to look at (conn->tls.looks): a TLS hello, or nothing.
 */
static __always_inline bool h2_first(const struct sock *sk, struct dw_conn *conn, enum h2_way way,
				     const struct h2_bytes *b, struct bpf_dynptr *skb, __u8 side,
				     bool from_skb)
{
	__u8 seen = way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX;
	__u8 buf[16] = {};
	__u32 n;

	n = first_bytes(b, skb, buf, from_skb);
	if (conn->h2.state == DW_H2_NEVER) {
		/* a later send of a connection that began in plaintext (DW_TLS_LOOKS) */
		if (n >= 2 && buf[0] == 0x16 && buf[1] == 3) {
			tls_first(conn, b, skb, side, from_skb);
			if (conn->tls.hello)
				conn->tls.looks = 0;
		}
		return false;
	}
	/* one byte of a TLS record (nginx peeks 1 to tell TLS from plain HTTP): the next read decides */
	if (n == 1 && buf[0] == 0x16)
		return false;
	conn->h2.seen |= seen;
	if (way == H2_RX && (conn->h2.seen & DW_H2_RX_PENDING)) {
		conn->h2.seen &= ~DW_H2_RX_PENDING;
		__sync_fetch_and_add(&dw_h2_pending, -1);
	}
	if (n >= 2 && buf[0] == 0x16 && buf[1] == 3 && conn->h2.state != DW_H2_MAYBE) {
		tls_first(conn, b, skb, side, from_skb);
		return false;
	}
	if (conn->h2.state == DW_H2_TLS || !first_bytes_h2(buf, n, side)) {
		h2_free(sk, conn, DW_H2_NEVER);
		/* plaintext first, either way: its later sends may start TLS in place */
		if (!conn->tls.hello)
			conn->tls.looks = DW_TLS_LOOKS;
		return false;
	}
	if (conn->h2.state == DW_H2_UNKNOWN)
		return h2_start(sk, conn, way, b->seq, side) != 0;
	return true;
}

#endif /* DEPWATCH_H2DETECT_BPF_H */
