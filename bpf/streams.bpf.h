/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stream layer: on a cleartext HTTP/2 (h2c) connection a call is a
 * stream. gRPC and other HTTP/2 clients put every concurrent call on one
 * connection; the transport model (one outstanding call per connection)
 * would count a fraction of them and time bursts. Here each stream is a
 * call of its own, with its own start, its own pending-table entry (so it
 * is in flight, and counts in the oldest, the slow sample, the stall and
 * the callers as any call does) and its own end.
 *
 * Recognising it. A new connection's first bytes are looked at once per
 * direction: the client's must be the connection preface (RFC 9113 3.4),
 * the server's a SETTINGS frame. Whichever comes first makes the
 * connection's state (struct dw_h2_conn); the whole preface makes it ON.
 * Anything else (most connections, at the cost of one look at their
 * first bytes) is NEVER and keeps the transport model. Connections open
 * before the start are never looked at.
 *
 * Walking it. Every send and every receive of an h2c connection is walked
 * frame by frame (bpf/h2.h) with bpf_loop, a bounded number of steps, from
 * where the direction's walker stands (its TCP sequence number: bytes
 * walked already are skipped, a gap is a desync). Where the bytes are:
 * - sock backend, sends: the msghdr at tcp_sendmsg_locked (user memory,
 *   before the copy; a send the kernel takes only part of is walked whole
 *   and its unsent bytes skipped when they come again);
 * - sock backend, receives: the skb at skb_copy_datagram_iovec (a copy to
 *   user space: the bytes the reader takes, in order, at the read);
 * - syscalls backend: the user buffers of the system call, at its exit.
 * A stream starts at the client's HEADERS on a new odd stream id (when the
 * send began) and ends at the server's first HEADERS or DATA on it
 * (completed, or failed for a 5xx :status the kernel can read), its
 * RST_STREAM (failed), the client's RST_STREAM (failed, cancelled),
 * GOAWAY above its id, or the connection's end (failed).
 *
 * Losing step (a gap, bytes that are not frames, too many frames for one
 * event) ends the connection's open streams as dropped (no outcome known:
 * never invented calls), counts h2_desync and hands the connection back to
 * the transport model, as multiplexed.
 */
#ifndef DEPWATCH_STREAMS_BPF_H
#define DEPWATCH_STREAMS_BPF_H

#include "call.bpf.h"
#include "cascade.bpf.h"
#include "h2.h"

/* TLS hellos (bpf/tls.h) are read from an event's first piece: user memory, or the skb. */
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

/* the walk of a hello from the skb and from user memory: two programs, one constant each */
#define DW_TLS_READ(src, off, dst, n) \
	tls_read((const struct tls_src *)(src), (off), (dst), (n), ((const struct tls_src *)(src))->skb != 0)
#include "tls.h"

/* The kernel's skbs in tracing programs (Linux 6.14+ for tp_btf): the receive side's bytes. */
extern int bpf_dynptr_from_skb(struct __sk_buff *skb, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym __weak;

enum h2_way { H2_TX = 0, H2_RX = 1 };

/* Where an event's bytes are. */
enum h2_src {
	H2_SRC_USER = 0,	/* one user buffer */
	H2_SRC_IOV_USER = 1,	/* an iovec array in user memory (the syscalls backend) */
	H2_SRC_IOV_KERNEL = 2,	/* an iovec array the kernel copied in (a msghdr's iov_iter) */
	H2_SRC_SKB = 3,		/* an skb (struct h2_walk.skb) */
};

/* An event's bytes: what a hook knows of them. */
struct h2_bytes {
	__u64 addr;	/* user address of the bytes (H2_SRC_USER), or of the iovec array */
	__u32 nseg;	/* iovecs in the array */
	__u32 off;	/* the first byte's offset in the first iovec, or in the skb */
	__u32 len;	/* bytes in the event */
	__u32 seq;	/* TCP sequence number of its first byte */
	__u8 kind;	/* enum h2_src */
};

/*
 * One event's walk: bpf_loop's context. Nothing here changes during the
 * walk; where it stands is the direction's struct dw_h2_cursor.
 */
struct h2_walk {
	struct dw_conn *conn;
	struct dw_h2_conn *h2;
	struct dw_h2_dir *dir;
	struct dw_h2_cursor *cur;
	struct bpf_dynptr *skb;
	__u64 now;
	__u8 in_task;		/* the sending task is current: its held request, its retries */
};

#define DW_H2_NO_GOAWAY 0x80000000U

static __always_inline struct dw_h2_conn *h2_of(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;

	if (dw_backend == DW_BACKEND_SYSCALLS)
		return bpf_map_lookup_elem(&h2_conns_sk, &key);
	return bpf_sk_storage_get(&h2_conns, (struct sock *)sk, 0, 0);
}

static __always_inline struct dw_h2_conn *h2_create(const struct sock *sk)
{
	static const struct dw_h2_conn fresh;
	__u64 key = (__u64)(unsigned long)sk;

	if (dw_backend != DW_BACKEND_SYSCALLS)
		return bpf_sk_storage_get(&h2_conns, (struct sock *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (bpf_map_update_elem(&h2_conns_sk, &key, &fresh, BPF_ANY))
		return 0;
	return bpf_map_lookup_elem(&h2_conns_sk, &key);
}

/* The connection's HTTP/2 state goes: at its close, a desync, or first bytes that are not HTTP/2. */
static __always_inline void h2_free(const struct sock *sk, struct dw_conn *conn, __u8 state)
{
	__u64 key = (__u64)(unsigned long)sk;

	if (conn->h2 == DW_H2_MAYBE || conn->h2 == DW_H2_ON) {
		if (dw_backend == DW_BACKEND_SYSCALLS)
			bpf_map_delete_elem(&h2_conns_sk, &key);
		else
			bpf_sk_storage_delete(&h2_conns, (struct sock *)sk);
		__sync_fetch_and_add(&dw_h2_live, -1);
	}
	conn->h2 = state;
}

/* The connection carries overlapping requests (HTTP/2 the stream layer does not walk): counted once. */
static __always_inline void conn_mark_multiplexed(struct dw_conn *conn)
{
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;

	if (conn->multiplexed)
		return;
	conn->multiplexed = 1;
	e = pend_of(conn);
	if (e)
		e->flags |= DW_PEND_MULTIPLEXED;
	st = stats_of(conn);
	if (st)
		st->conns_multiplexed++;
}

/* The stream layer has the connection: the transport model leaves its events alone. */
static __always_inline bool h2_took(const struct dw_conn *conn)
{
	return conn->h2 == DW_H2_MAYBE || conn->h2 == DW_H2_ON;
}

/* ---- Streams: their slots, starts and ends ---- */

static __always_inline struct dw_h2_stream *stream_slot(struct dw_h2_conn *h2, __u32 id, __u32 i)
{
	__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

	return &h2->s[idx];
}

/*
 * Claims back the start of the stream in slot s (exactly once: a frame and
 * a close may race on two CPUs in the syscalls backend) and frees the
 * slot; its start, and its pending-table entry in *pend; 0 if someone else
 * ended it.
 */
static __always_inline __u64 stream_release(struct dw_h2_stream *s, __u32 *pend)
{
	__u64 start = s->start_ns;

	if (!start || __sync_val_compare_and_swap(&s->start_ns, start, 0) != start)
		return 0;
	*pend = __sync_lock_test_and_set(&s->pend, 0);
	barrier();
	*(volatile __u32 *)&s->id = 0;
	return start;
}

/* Ends the stream in slot s now, if nobody else did: counted at once (closes, sweeps). */
static __always_inline void stream_close(struct dw_conn *conn, struct dw_h2_stream *s,
					 enum call_outcome outcome, __u64 now)
{
	__u32 pend = 0;
	__u64 start = stream_release(s, &pend);

	if (!start)
		return;
	pend_release(pend);
	count_end(conn, start, outcome, now, false);
}

/*
 * The slot holding stream id (early: its early answer instead), or
 * DW_H2_STREAMS. Finding and acting are apart so that the verifier walks
 * each action once, not once a probe.
 */
static __always_inline __u32 stream_find(struct dw_h2_conn *h2, __u32 id, bool early)
{
	for (__u32 i = 0; i < DW_H2_PROBES; i++) {
		__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

		if (h2->s[idx].id == id && !h2->s[idx].early_ns == !early)
			return idx;
	}
	return DW_H2_STREAMS;
}

/* A free slot of stream id's window, claimed for it; DW_H2_STREAMS if none is free. */
static __always_inline __u32 stream_claim(struct dw_h2_conn *h2, __u32 id)
{
	for (__u32 i = 0; i < DW_H2_PROBES; i++) {
		__u32 idx = dw_h2_probe(id, i) & (DW_H2_STREAMS - 1);

		if (!h2->s[idx].id && __sync_val_compare_and_swap(&h2->s[idx].id, 0, id) == 0)
			return idx;
	}
	return DW_H2_STREAMS;
}

/* What the walk owes (struct dw_h2_cursor.owed). */
enum h2_owed {
	H2_OWE_NONE = 0,
	H2_OWE_START,		/* a stream started: its pending entry, its start counted */
	H2_OWE_END,		/* a stream ended */
	H2_OWE_CANCEL,		/* a stream ended, reset by its client */
	H2_OWE_EARLY,		/* a stream started whose answer came first: both counted */
};

static __always_inline void owe(struct dw_h2_cursor *c, __u8 what, __u64 start, __u64 end)
{
	c->owed = what;
	c->owed_start = start;
	c->owed_end = end;
}

/* The client opened stream id: its slot now, the rest owed. */
static __always_inline void stream_open(struct h2_walk *w, __u32 id)
{
	struct dw_h2_stream *s;
	struct dw_dest_stats *st;
	__u32 idx = stream_find(w->h2, id, true);
	__u64 early;

	if (idx < DW_H2_STREAMS) {
		s = &w->h2->s[idx];
		early = s->early_ns;
		if (!early || __sync_val_compare_and_swap(&s->early_ns, early, 0) != early)
			return;
		*(volatile __u32 *)&s->id = 0;
		w->cur->owed_outcome = early & 1 ? OUTCOME_FAILED : OUTCOME_COMPLETED;
		owe(w->cur, H2_OWE_EARLY, w->now, early & ~1ULL);
		return;
	}
	idx = stream_claim(w->h2, id);
	if (idx < DW_H2_STREAMS) {
		*(volatile __u64 *)&w->h2->s[idx].start_ns = w->now;
		w->cur->owed_slot = idx;
		owe(w->cur, H2_OWE_START, w->now, 0);
		return;
	}
	st = stats_of(w->conn);
	if (st)
		st->streams_untracked++;
}

/* A frame ended stream id (or answered one not opened yet, as far as the walk has seen). */
static __always_inline void stream_end(struct h2_walk *w, __u32 id, enum call_outcome outcome,
				       bool cancelled)
{
	__u32 idx = stream_find(w->h2, id, false), pend = 0;
	__u64 start;

	if (idx < DW_H2_STREAMS) {
		start = stream_release(&w->h2->s[idx], &pend);
		if (!start)
			return;
		w->cur->owed_pend = pend;
		w->cur->owed_outcome = outcome;
		owe(w->cur, cancelled ? H2_OWE_CANCEL : H2_OWE_END, start, w->now);
		return;
	}
	/* client ids only grow: a server frame above the newest is for a start not walked yet */
	if (cancelled || !(id & 1) || id <= w->h2->newest)
		return;
	idx = stream_claim(w->h2, id);
	if (idx < DW_H2_STREAMS)
		w->h2->s[idx].early_ns = (w->now & ~1ULL) | (outcome == OUTCOME_FAILED);
}

/*
 * A stream's start, owed: its own pending-table entry (in flight, with its
 * age: the oldest, the slow sample, the stall count it) and its start in
 * the counters. A close that raced the walk may have ended the stream
 * already: its entry then goes straight back.
 */
static __always_inline void pay_start(struct h2_walk *w, struct dw_h2_cursor *c)
{
	const struct dw_thread_req *caller = w->in_task ? caller_of() : 0;
	struct dw_h2_stream *s = &w->h2->s[c->owed_slot & (DW_H2_STREAMS - 1)];
	struct dw_pending_entry *e;
	struct dw_dest_stats *st;
	__u32 pend = pend_take();

	e = pend_entry(pend);
	if (e) {
		e->connect_start_ns = 0;
		e->slot = w->conn->slot;
		e->caller = w->conn->caller;
		e->caller_netns = caller ? caller->netns : 0;
		e->caller_port = caller ? caller->port : 0;
		e->flags = 0;
		e->call_start_ns = c->owed_start;
	}
	s->pend = pend;
	barrier();
	if (*(volatile __u64 *)&s->start_ns != c->owed_start &&
	    __sync_val_compare_and_swap(&s->pend, pend, 0) == pend)
		pend_release(pend);
	st = count_start(w->conn, c->owed_start);
	if (!st)
		return;
	st->calls_streams++;
	if (w->in_task)
		retry_check(w->conn, st, c->owed_start);
}

/* What the walk owes, paid: one of a start, an end, or both (an early answer). */
static __always_inline void pay(struct h2_walk *w, struct dw_h2_cursor *c)
{
	struct dw_dest_stats *st;
	__u8 what = c->owed;

	c->owed = H2_OWE_NONE;
	if (what == H2_OWE_START) {
		pay_start(w, c);
		return;
	}
	if (what == H2_OWE_EARLY) {
		st = count_start(w->conn, c->owed_start);
		if (st)
			st->calls_streams++;
	} else {
		pend_release(c->owed_pend);
	}
	count_end(w->conn, c->owed_start, c->owed_outcome, c->owed_end, false);
	if (what != H2_OWE_CANCEL)
		return;
	/* the client reset the stream: it gave up waiting (a gRPC deadline, a cancel) */
	st = stats_of(w->conn);
	if (st)
		st->calls_cancelled++;
	if (w->in_task)
		call_abandon(w->conn);
}

static __always_inline void h2_frame(struct h2_walk *w)
{
	struct dw_h2_frame f;
	__u32 last;

	int act;

	dw_h2_frame_of(w->dir, &f);
	act = dw_h2_action(&f, w->dir->side, w->h2->newest);
	if (act == DW_H2_ACT_OPEN) {
		w->h2->newest = f.id;
		stream_open(w, f.id);
	} else if (act == DW_H2_ACT_GOAWAY) {
		last = dw_h2_goaway_last(&f);
		if (last < w->cur->goaway)
			w->cur->goaway = last;
	} else if (act != DW_H2_ACT_NONE) {
		stream_end(w, f.id, act == DW_H2_ACT_ANSWER ? OUTCOME_COMPLETED : OUTCOME_FAILED,
			   act == DW_H2_ACT_CANCEL);
	}
}

/* ---- Walking an event's bytes ---- */

static __always_inline void walk_advance(struct dw_h2_cursor *c, __u32 n)
{
	c->at += n;
	c->seg -= n;
	c->left -= n;
}

/* The next iovec of the event becomes the current piece. */
static __always_inline long walk_next_iovec(struct dw_h2_cursor *c)
{
	struct iovec v;
	long err;

	if (c->kind == H2_SRC_USER || !c->nseg)
		goto bad;
	if (c->kind == H2_SRC_IOV_KERNEL)
		err = bpf_probe_read_kernel(&v, sizeof(v), (const void *)c->iov);
	else
		err = bpf_probe_read_user(&v, sizeof(v), (const void *)c->iov);
	if (err)
		goto bad;
	c->iov += sizeof(v);
	c->nseg--;
	c->at = (__u64)(unsigned long)v.iov_base;
	c->seg = v.iov_len < c->left ? v.iov_len : c->left;
	return 0;
bad:
	c->bad = 1;
	return 1;
}

static __always_inline long walk_copy(struct h2_walk *w, __u8 *dst, __u32 n, bool from_skb)
{
	if (from_skb)
		return bpf_dynptr_read(dst, n, w->skb, (__u32)w->cur->at, 0);
	return bpf_probe_read_user(dst, n, (const void *)w->cur->at);
}

/* One step of a walk (bpf_loop's callback body): 1 stops the loop. */
static __always_inline long walk_step(struct h2_walk *w, bool from_skb)
{
	struct dw_h2_cursor *c = w->cur;
	__u32 n, take;
	__u8 *dst;
	int r;

	if (c->owed) {
		pay(w, c);
		return 0;
	}
	if (!c->left)
		return 1;
	if (!c->seg) {
		if (!from_skb)
			return walk_next_iovec(c);
		goto bad;
	}
	if (c->skip) {
		take = c->skip < c->seg ? c->skip : c->seg;
		walk_advance(c, take);
		c->skip -= take;
		return 0;
	}
	n = dw_h2_need(w->dir, &dst);
	take = n < c->seg ? n : c->seg;
	if (dst) {
		/* at most 25: the mask tells the verifier */
		take &= 31;
		if (!take || walk_copy(w, dst, take, from_skb))
			goto bad;
	}
	if (!take)
		goto bad;
	walk_advance(c, take);
	r = dw_h2_took(w->dir, take);
	if (r == DW_H2_BAD)
		goto bad;
	if (r == DW_H2_FRAME)
		h2_frame(w);
	return 0;
bad:
	c->bad = 1;
	return 1;
}

/* bpf_loop's callbacks: user memory (a buffer, or iovecs: struct h2_walk.kind), an skb. */
static long walk_user(__u32 i, void *ctx)
{
	return walk_step(ctx, false);
}

static long walk_skb(__u32 i, void *ctx)
{
	return walk_step(ctx, true);
}

/* ---- A connection's streams, all at once ---- */

struct h2_sweep {
	struct dw_conn *conn;
	struct dw_h2_conn *h2;
	__u64 now;
	__u32 above;		/* streams above this id end; 0: all of them (and early answers go) */
	__u32 outcome;
};

static long sweep_one(__u32 i, void *ctx)
{
	struct h2_sweep *c = ctx;
	struct dw_h2_stream *s = &c->h2->s[i & (DW_H2_STREAMS - 1)];

	if (!s->id || s->id <= c->above)
		return 0;
	if (s->early_ns) {
		if (!c->above) {
			s->early_ns = 0;
			*(volatile __u32 *)&s->id = 0;
		}
		return 0;
	}
	stream_close(c->conn, s, c->outcome, c->now);
	return 0;
}

/* Ends every open stream above id above (0: all) as outcome. */
static __always_inline void h2_sweep(struct dw_conn *conn, struct dw_h2_conn *h2, __u32 above,
				     enum call_outcome outcome, __u64 now)
{
	struct h2_sweep c = { .conn = conn, .h2 = h2, .now = now, .above = above, .outcome = outcome };

	bpf_loop(DW_H2_STREAMS, sweep_one, &c, 0);
}

/*
 * The parser lost step (its open streams were swept as dropped: no
 * outcome known, no call invented): the transport model takes the
 * connection back, as multiplexed.
 */
static __always_inline void h2_lost(const struct sock *sk, struct dw_conn *conn)
{
	struct dw_dest_stats *st;

	h2_free(sk, conn, DW_H2_LOST);
	conn_mark_multiplexed(conn);
	st = stats_of(conn);
	if (st)
		st->h2_desync++;
}

/* ---- Recognising a connection ---- */

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
		conn->h2 = DW_H2_NEVER;
		conn_mark_multiplexed(conn);
		return 0;
	}
	__sync_fetch_and_add(&dw_h2_live, 1);
	conn->h2 = DW_H2_MAYBE;
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

	conn->h2 = DW_H2_ON;
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
 * the hello says it speaks HTTP/2 (bpf/tls.h); the server's hello is still
 * to be read if the client's left it open (TLS 1.2 names the choice).
 */
static __always_inline void tls_first(struct dw_conn *conn, const struct h2_bytes *b, struct bpf_dynptr *skb,
				      __u8 side, bool from_skb)
{
	struct tls_src t;
	__u32 alpn;

	tls_src_of(b, skb, &t, from_skb);
	alpn = dw_tls_alpn(&t, t.len);
	conn->h2 = DW_H2_NEVER;
	if (!alpn)
		return;
	conn->tls = 1;
	if (dw_tls_h2_only(alpn, side == DW_H2_SERVER))
		conn_mark_multiplexed(conn);
	else if (side == DW_H2_CLIENT && (alpn & DW_ALPN_H2))
		conn->h2 = DW_H2_TLS;
}

/*
 * A direction's first bytes: HTTP/2's (its state made if need be), a TLS
 * hello (tls_first), or neither (NEVER).
 */
static __always_inline bool h2_first(const struct sock *sk, struct dw_conn *conn, enum h2_way way,
				     const struct h2_bytes *b, struct bpf_dynptr *skb, __u8 side,
				     bool from_skb)
{
	__u8 buf[16] = {};
	__u32 n;

	conn->h2_seen |= way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX;
	if (way == H2_RX && (conn->h2_seen & DW_H2_RX_PENDING)) {
		conn->h2_seen &= ~DW_H2_RX_PENDING;
		__sync_fetch_and_add(&dw_h2_pending, -1);
	}
	n = first_bytes(b, skb, buf, from_skb);
	if (n >= 2 && buf[0] == 0x16 && buf[1] == 3 && conn->h2 != DW_H2_MAYBE) {
		tls_first(conn, b, skb, side, from_skb);
		return false;
	}
	if (conn->h2 == DW_H2_TLS || !first_bytes_h2(buf, n, side)) {
		h2_free(sk, conn, DW_H2_NEVER);
		return false;
	}
	if (conn->h2 == DW_H2_UNKNOWN)
		return h2_start(sk, conn, way, b->seq, side) != 0;
	return true;
}

/*
 * An event's bytes on a connection that is or may be h2c (sends and
 * receives, either backend); true if the stream layer took the event, and
 * the transport model must leave it alone. now: when a send began, or
 * when the receive is.
 */
static __always_inline bool h2_on_bytes(const struct sock *sk, struct dw_conn *conn, enum h2_way way,
					const struct h2_bytes *b, struct bpf_dynptr *skb, __u64 now,
					bool from_skb)
{
	__u8 side = (way == H2_TX) == (conn->role == DW_ROLE_OUTBOUND) ? DW_H2_CLIENT : DW_H2_SERVER;
	struct h2_walk w = { .conn = conn, .skb = skb, .now = now, .in_task = way == H2_TX };
	struct dw_h2_dir *client;
	struct dw_h2_cursor *c;
	bool lost;
	__s64 skip;

	if (conn->h2 == DW_H2_NEVER || conn->h2 == DW_H2_LOST || !b->len)
		return false;
	if (!(conn->h2_seen & (way == H2_TX ? DW_H2_SEEN_TX : DW_H2_SEEN_RX)) &&
	    !h2_first(sk, conn, way, b, skb, side, from_skb))
		return false;
	if (conn->h2 == DW_H2_TLS)
		return false;
	w.h2 = h2_of(sk);
	if (!w.h2) {
		h2_free(sk, conn, DW_H2_NEVER);
		return false;
	}
	w.dir = way == H2_TX ? &w.h2->tx : &w.h2->rx;
	c = w.cur = way == H2_TX ? &w.h2->tx_cur : &w.h2->rx_cur;
	skip = dw_h2_skip(w.dir, b->seq, b->len);
	c->goaway = DW_H2_NO_GOAWAY;
	c->owed = H2_OWE_NONE;
	c->bad = skip < 0;
	c->left = 0;
	if (!c->bad) {
		c->skip = skip;
		c->left = b->len;
		c->kind = b->kind;
		c->nseg = b->nseg;
		c->iov = b->addr;
		c->at = from_skb ? b->off : b->addr + b->off;
		c->seg = b->len;
		if (!from_skb && b->kind != H2_SRC_USER && walk_next_iovec(c) == 0) {
			/* the first iovec, then the offset into it */
			c->at += b->off;
			c->seg = c->seg > b->off ? c->seg - b->off : 0;
		}
		if (from_skb)
			bpf_loop(DW_H2_STEPS, walk_skb, &w, 0);
		else
			bpf_loop(DW_H2_STEPS, walk_user, &w, 0);
	}
	/*
	 * One sweep, at one place (the verifier walks its callback once a call
	 * site): a desync drops every open stream (a count still owed, the walk
	 * having run out of steps, is swept with them), a GOAWAY fails those
	 * above its last stream id.
	 */
	lost = c->bad || c->left || c->owed;
	if (lost || c->goaway != DW_H2_NO_GOAWAY)
		h2_sweep(conn, w.h2, lost ? 0 : c->goaway, lost ? OUTCOME_DROPPED : OUTCOME_FAILED, now);
	if (lost) {
		h2_lost(sk, conn);
		return false;
	}
	client = conn->role == DW_ROLE_OUTBOUND ? &w.h2->tx : &w.h2->rx;
	if (conn->h2 == DW_H2_MAYBE && !client->pre)
		h2_on(conn, now);
	/* an inbound row's process, who answers on the port: noted at its first answer, as today */
	if (conn->role == DW_ROLE_INBOUND && way == H2_TX && !conn->process_noted)
		row_process(conn, bpf_get_current_pid_tgid() >> 32);
	return true;
}

/*
 * The connection's TCP state moved: nothing more answers its open streams
 * once the server closed (outbound: the peer's FIN or reset; inbound: the
 * socket is gone), and at TCP_CLOSE its state goes.
 */
static __always_inline void h2_on_state(const struct sock *sk, struct dw_conn *conn, int newstate)
{
	struct dw_h2_conn *h2;

	if (conn->h2 != DW_H2_MAYBE && conn->h2 != DW_H2_ON)
		return;
	if (newstate != TCP_CLOSE && !(newstate == TCP_CLOSE_WAIT && conn->role == DW_ROLE_OUTBOUND))
		return;
	h2 = h2_of(sk);
	if (h2)
		h2_sweep(conn, h2, 0, OUTCOME_FAILED, bpf_ktime_get_ns());
	if (newstate == TCP_CLOSE)
		h2_free(sk, conn, DW_H2_NEVER);
}

/* Data reached a connection whose first received bytes are not looked at yet (sock backend). */
static __always_inline void h2_rx_pending(struct dw_conn *conn)
{
	if ((conn->h2 != DW_H2_UNKNOWN && conn->h2 != DW_H2_TLS) ||
	    (conn->h2_seen & (DW_H2_SEEN_RX | DW_H2_RX_PENDING)))
		return;
	conn->h2_seen |= DW_H2_RX_PENDING;
	__sync_fetch_and_add(&dw_h2_pending, 1);
}

/* At TCP_CLOSE: a first read never looked at is no longer pending. */
static __always_inline void h2_forget(struct dw_conn *conn)
{
	if (!(conn->h2_seen & DW_H2_RX_PENDING))
		return;
	conn->h2_seen &= ~DW_H2_RX_PENDING;
	__sync_fetch_and_add(&dw_h2_pending, -1);
}

/* A send begins (sock backend, tcp_sendmsg_locked): its bytes are the msghdr's. */
static __always_inline bool h2_on_send_msg(const struct sock *sk, struct dw_conn *conn,
					   const struct msghdr *msg)
{
	struct h2_bytes b = {};
	__u8 type;

	if (conn->h2 == DW_H2_NEVER || conn->h2 == DW_H2_LOST || !msg)
		return false;
	type = msg->msg_iter.iter_type;
	b.len = msg->msg_iter.count;
	b.off = msg->msg_iter.iov_offset;
	b.seq = tcp_of(sk)->write_seq;
	/*
	 * The addresses are read as numbers (a probe read), not loaded as the
	 * pointers BTF says they are: the verifier would track a pointer's
	 * offset through every step of the walk and never see two steps alike.
	 */
	if (type == bpf_core_enum_value(enum iter_type, ITER_UBUF)) {
		b.kind = H2_SRC_USER;
		bpf_core_read(&b.addr, sizeof(b.addr), &msg->msg_iter.ubuf);
	} else if (type == bpf_core_enum_value(enum iter_type, ITER_IOVEC)) {
		b.kind = H2_SRC_IOV_KERNEL;
		bpf_core_read(&b.addr, sizeof(b.addr), &msg->msg_iter.__iov);
		b.nseg = msg->msg_iter.nr_segs;
	} else {
		/* kernel memory (sendfile, splice, kTLS): not walked; on an h2c connection, a gap */
		return false;
	}
	return h2_on_bytes(sk, conn, H2_TX, &b, 0, bpf_ktime_get_ns(), false);
}

/* A copy to user space (sock backend, skb_copy_datagram_iovec): the bytes the reader takes. */
static __always_inline void h2_on_copy(const struct sk_buff *skb, int len)
{
	struct h2_bytes b = { .kind = H2_SRC_SKB, .len = len };
	struct bpf_dynptr d;
	const struct sock *sk;
	struct dw_conn *conn;
	__u32 skb_seq;

	if (!*(volatile __u32 *)&dw_h2_live && !*(volatile __u32 *)&dw_h2_pending)
		return;
	if (!skb || len <= 0)
		return;
	sk = skb->sk;
	if (!sk || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != IPPROTO_TCP)
		return;
	conn = conn_of(sk);
	if (!conn || conn->h2 == DW_H2_NEVER || conn->h2 == DW_H2_LOST)
		return;
	if (!bpf_dynptr_from_skb || bpf_dynptr_from_skb((struct __sk_buff *)skb, 0, &d))
		return;
	/* the reader copies from copied_seq on (tcp_recvmsg_locked), the skb's data from cb->seq */
	skb_seq = BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, seq);
	b.seq = BPF_CORE_READ((const struct tcp_sock *)sk, copied_seq);
	b.off = b.seq - skb_seq;
	if (BPF_CORE_READ((const struct tcp_skb_cb *)skb->cb, tcp_flags) & 0x02 /* TCPHDR_SYN */)
		b.off--;
	h2_on_bytes(sk, conn, H2_RX, &b, &d, bpf_ktime_get_ns(), true);
}

#endif /* DEPWATCH_STREAMS_BPF_H */
