/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The server's header blocks of HTTP/2 connections, to the daemon (issue
 * 33; the record is bpf/h2/hblock.h). The walker (h2walk.bpf.h) calls
 * hb_frame() at each frame it has the header of and hb_body() for each
 * piece of a payload it passes over: only a server's HEADERS and
 * CONTINUATION are copied, up to DW_HB_FRAME_MAX bytes a frame, DATA and
 * every other frame never. On h2c and on TLS plaintext alike (the same
 * walker). The ring wakes the daemon only once it is a quarter full; the
 * daemon also drains it at each poll, so a call costs no wakeup.
 *
 * Needs, included before it: h2/h2stream.bpf.h.
 */
#ifndef DEPWATCH_HBLOCK_BPF_H
#define DEPWATCH_HBLOCK_BPF_H

#include "h2/hblock.h"

/* Set by the daemon before load: 0 keeps every block in the kernel (no HPACK decoding). */
const volatile __u32 dw_hb_enabled __weak = 1;

/* The connections' numbers in their records (struct dw_h2_conn.hb_id) */
__u64 dw_hb_next __weak;

static __always_inline void hb_send(struct h2_walk *w, struct dw_h2_cursor *c, __u32 nbody,
				    bool from_skb)
{
	struct dw_hb_rec *r;
	__u32 seq = w->h2->hb_seq++;
	__u64 flags;

	if (!w->h2->hb_id)
		w->h2->hb_id = __sync_fetch_and_add(&dw_hb_next, 1) + 1;
	r = bpf_ringbuf_reserve(&hblocks, sizeof(*r), 0);
	if (!r) {
		global_count(G_hblocks_lost);
		return;
	}
	r->conn_id = w->h2->hb_id;
	r->start_ns = c->hb_start;
	r->end_ns = c->hb_end;
	r->seq = seq;
	r->stream = c->hb_stream;
	r->slot = w->conn->slot;
	r->frame_len = c->hb_len;
	r->type = c->hb_type;
	r->flags = c->hb_flags;
	r->flags2 = c->hb_flags2;
	r->role = w->conn->role;
	r->pad = 0;
	r->npeek = c->hb_npeek;
	r->off = c->hb_off - c->hb_npeek;
	__builtin_memcpy(r->peek, w->dir->buf + DW_H2_HDR_LEN, DW_HB_PEEK);
	c->hb_npeek = 0;
	if (nbody > DW_HB_BODY)
		nbody = DW_HB_BODY;
	r->nbody = nbody;
	if (nbody && walk_copy(w, r->body, nbody, from_skb))
		r->nbody = 0;	/* the daemon sees the piece missing: a gap */
	flags = bpf_ringbuf_query(&hblocks, BPF_RB_AVAIL_DATA) > DW_HB_RING_BYTES / 4 ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

/*
 * A frame's header (and peek) are in: a server's HEADERS or CONTINUATION
 * is to be copied. A frame whose payload is all in its peek goes out now.
 * ended: the frame ended its stream's call (H2_OWE_END owed, now).
 */
static __always_inline void hb_frame(struct h2_walk *w, const struct dw_h2_frame *f)
{
	struct dw_h2_cursor *c = w->cur;

	c->hb_on = dw_hb_enabled && w->dir->side == DW_H2_SERVER &&
		   (f->type == DW_H2_HEADERS || f->type == DW_H2_CONTINUATION);
	if (!c->hb_on)
		return;
	c->hb_flags2 = 0;
	c->hb_start = 0;
	c->hb_end = 0;
	if (c->owed == H2_OWE_END) {
		c->hb_flags2 = DW_HB_ENDED | (c->owed_outcome == OUTCOME_FAILED ? DW_HB_KFAILED : 0);
		c->hb_start = c->owed_start;
		c->hb_end = c->owed_end;
	}
	c->hb_stream = f->id;
	c->hb_len = f->len;
	c->hb_type = f->type;
	c->hb_flags = f->flags;
	c->hb_npeek = f->npeek;
	c->hb_off = f->npeek;
	if (f->npeek >= f->len)
		hb_send(w, c, 0, false);
}

/*
 * take payload bytes of the current frame are about to be passed over:
 * those of a block frame go out (the peek with the first), up to
 * DW_HB_BODY a record; the bytes to pass over now, at most take.
 */
static __always_inline __u32 hb_body(struct h2_walk *w, __u32 take, bool from_skb)
{
	struct dw_h2_cursor *c = w->cur;

	if (!c->hb_on)
		return take;
	if (c->hb_off >= DW_HB_FRAME_MAX) {
		c->hb_off += take;
		return take;
	}
	if (take > DW_HB_BODY)
		take = DW_HB_BODY;
	hb_send(w, c, take, from_skb);
	c->hb_off += take;
	return take;
}

#endif /* DEPWATCH_HBLOCK_BPF_H */
