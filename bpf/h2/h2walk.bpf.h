/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Walking an event's bytes: the frame walker (h2.h) stepped with bpf_loop
 * over a buffer, an iovec array or an skb, from where the direction's
 * cursor (struct dw_h2_cursor, in map memory) stands; each whole frame to
 * h2_frame(), each count owed paid between two steps.
 *
 * Needs, included before it: h2/hblock.bpf.h.
 */
#ifndef DEPWATCH_H2WALK_BPF_H
#define DEPWATCH_H2WALK_BPF_H

static __always_inline void walk_advance(struct dw_h2_cursor *c, __u32 n)
{
	c->at += n;
	c->seg -= n;
	c->left -= n;
}

/*
 * The next iovec of the event becomes the current piece, from its byte off on: 0, but for
 * the first, where the iterator may stand inside it (b->off).
 */
static __always_inline long walk_next_iovec(struct dw_h2_cursor *c, __u32 off)
{
	struct iovec v;
	__u64 len;
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
	/*
	 * Its bytes from off on, at most the event's left: the offset comes off the iovec's
	 * length, not off the event's, whose length counts from the offset already.
	 */
	len = v.iov_len > off ? v.iov_len - off : 0;
	c->at = (__u64)(unsigned long)v.iov_base + off;
	c->seg = len < c->left ? len : c->left;
	return 0;
bad:
	c->bad = 1;
	return 1;
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
			return walk_next_iovec(c, 0);
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
	if (!dst)
		take = hb_body(w, take, from_skb);
	walk_advance(c, take);
	r = dw_h2_took(w->dir, take);
	if (r == DW_H2_BAD)
		goto bad;
	if (r == DW_H2_FRAME) {
		struct dw_h2_frame f;

		h2_frame(w);
		dw_h2_frame_of(w->dir, &f);
		hb_frame(w, &f);
	}
	return 0;
bad:
	c->bad = 1;
	return 1;
}

/* bpf_loop's callback for an skb (user memory's: walk_user_step, below). */
static long walk_skb(__u32 i, void *ctx)
{
	return walk_step(ctx, true);
}

/*
 * An event's walk, in three parts: the cursor set from the bytes b (false: nothing to walk,
 * a gap), the frames walked from where the direction stands (its sequence number: bytes
 * walked already are skipped, a gap is a desync), and the one sweep after it (a desync drops
 * every open stream, a count still owed or a walk out of steps with them; a GOAWAY fails those
 * above its last stream id): walk_end() returns 1 if the connection lost step (its caller
 * hands it back to the transport model), else 0.
 */
static __always_inline bool walk_begin(struct dw_h2_cursor *c, struct dw_h2_dir *dir, const struct h2_bytes *b,
				       bool from_skb)
{
	__s64 skip = dw_h2_skip(dir, b->seq, b->len);

	c->goaway = DW_H2_NO_GOAWAY;
	c->owed = H2_OWE_NONE;
	c->bad = skip < 0;
	c->left = 0;
	if (c->bad)
		return false;
	c->skip = skip;
	c->left = b->len;
	c->kind = b->kind;
	c->nseg = b->nseg;
	c->iov = b->addr;
	c->at = from_skb ? b->off : b->addr + b->off;
	c->seg = b->len;
	/*
	 * An iovec array: its first iovec from the iterator's offset into it. On 6.18 that offset
	 * is not 0 at every event: tcp_sendmsg_locked fires once a pass of the send's copy loop
	 * (each skb, each page fragment it fills), its iterator advanced by the passes before;
	 * those later events' bytes were all walked at the first, and are skipped. The offset
	 * taken off the event's length instead of the iovec's lost the last b->off bytes of the
	 * array, a desync (nginx's writev, behind h2load -m 10: the inbound h2_desync).
	 */
	if (!from_skb && b->kind != H2_SRC_USER && walk_next_iovec(c, b->off))
		return false;
	return true;
}

/*
 * The sweep after a walk, a subprogram of its own: its context is then on its own stack, not on
 * the program's, whose chain of frames (program, callback, step) must stay within 512 bytes as
 * 6.1 counts them (each frame rounded up to 32).
 */
static __noinline void walk_sweep(struct dw_conn *conn, struct dw_h2_conn *h2, __u32 above, __u32 outcome,
				  __u64 now)
{
	h2_sweep_at(conn, h2, above, outcome, now);
}

static __always_inline int walk_end(struct dw_conn *conn, struct dw_h2_conn *h2, struct dw_h2_cursor *c,
				    __u64 now)
{
	bool lost = c->bad || c->left || c->owed;

	if (lost || c->goaway != DW_H2_NO_GOAWAY)
		walk_sweep(conn, h2, lost ? 0 : c->goaway, lost ? OUTCOME_DROPPED : OUTCOME_FAILED, now);
	return lost;
}

/* The walk of an skb (the sock backend's copies, h2_on_copy), inline: its dynptr cannot be passed. */
static __always_inline int walk_skb_bytes(struct h2_walk *w, const struct h2_bytes *b)
{
	if (walk_begin(w->cur, w->dir, b, true))
		bpf_loop(DW_H2_STEPS, walk_skb, w, 0);
	return walk_end(w->conn, w->h2, w->cur, w->now);
}

/*
 * One step of a walk of user memory, as a global function. bpf_loop's callback is walked by
 * the verifier again and again until the loop's states converge (6.18); a step inlined there
 * (frames, streams, counts) was most of the verifier's work at every start. Called from it,
 * the step is walked once per program, and the callback itself is a few instructions
 * (issues 45, 46).
 */
__weak __noinline int h2_step_user(struct dw_conn *conn, struct dw_h2_conn *h2, __u64 now, __u32 way)
{
	struct h2_walk w = { .conn = conn, .h2 = h2, .now = now, .in_task = way == H2_TX };

	if (!conn || !h2)
		return 1;
	w.dir = way == H2_TX ? &h2->tx : &h2->rx;
	w.cur = way == H2_TX ? &h2->tx_cur : &h2->rx_cur;
	return walk_step(&w, false);
}

/* bpf_loop's context for a walk of user memory: what h2_step_user() needs, no more (stack). */
struct h2_user_walk {
	struct dw_conn *conn;
	struct dw_h2_conn *h2;
	__u64 now;
	__u32 way;
};

static long walk_user_step(__u32 i, void *ctx)
{
	struct h2_user_walk *u = ctx;

	return h2_step_user(u->conn, u->h2, u->now, u->way) ? 1 : 0;
}

/*
 * The walk of bytes in user memory (every walk but the sock backend's copies from an skb: the
 * sends, the reads, either backend, and TLS's plaintext), way H2_TX or H2_RX, at now. Inline:
 * its steps are the global function, and a frame of its own here would take the chain of frames
 * (program, callback, step) past 512 bytes as 6.1 counts them, each rounded up to 32.
 */
static __always_inline int h2_walk_user(struct dw_conn *conn, struct dw_h2_conn *h2, const struct h2_bytes *b,
					__u64 now, __u32 way)
{
	struct dw_h2_cursor *c = way == H2_TX ? &h2->tx_cur : &h2->rx_cur;
	struct h2_user_walk u = { .conn = conn, .h2 = h2, .now = now, .way = way };

	if (walk_begin(c, way == H2_TX ? &h2->tx : &h2->rx, b, false))
		bpf_loop(DW_H2_STEPS, walk_user_step, &u, 0);
	return walk_end(conn, h2, c, now);
}

#endif /* DEPWATCH_H2WALK_BPF_H */
