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

/*
 * bpf_loop's callbacks: user memory (a buffer, or iovecs: struct h2_walk.kind), an skb.
 * Unused is no error: TLS's plaintext walk (tls/tlsh2.bpf.h) has no skb.
 */
static __attribute__((unused)) long walk_user(__u32 i, void *ctx)
{
	return walk_step(ctx, false);
}

static __attribute__((unused)) long walk_skb(__u32 i, void *ctx)
{
	return walk_step(ctx, true);
}

#endif /* DEPWATCH_H2WALK_BPF_H */
