/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/2 frames, as the stream layer (streams.bpf.h) reads them off a
 * cleartext (h2c) connection: the client's connection preface, the 9-byte
 * frame headers (RFC 9113 4.1: 24-bit length, type, flags, 31-bit stream
 * id) and, for the few frames whose payload says something about a call
 * (a response's :status, GOAWAY's last stream id), its first bytes. HPACK
 * is not needed for timing: only :status values the static table names
 * (RFC 7541 Appendix A, indices 8-14) or a literal with an indexed name
 * can be read without the connection's header table.
 *
 * Pure (dwcompat.h): no BPF helper and no I/O. A direction's bytes come in
 * pieces of any size (a frame header split over two reads, a DATA frame
 * over many); the walker keeps its place in struct dw_h2_dir and says what
 * it needs next (dw_h2_need: collect n bytes into its buffer, or pass over
 * n bytes), and the caller, who knows where the bytes are (user memory at
 * a system call, an skb), copies or skips them and reports back
 * (dw_h2_took). Built into the BPF object and, on the host, into
 * tests/unit/test_h2.c.
 */
#ifndef DEPWATCH_H2_H
#define DEPWATCH_H2_H

#include "depwatch.h"

#define DW_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define DW_H2_PREFACE_LEN 24
#define DW_H2_HDR_LEN 9
/* payload bytes collected from a frame whose payload is read (a response HEADERS, GOAWAY) */
#define DW_H2_PEEK 16

enum dw_h2_type {
	DW_H2_DATA = 0,
	DW_H2_HEADERS = 1,
	DW_H2_PRIORITY = 2,
	DW_H2_RST_STREAM = 3,
	DW_H2_SETTINGS = 4,
	DW_H2_PUSH_PROMISE = 5,
	DW_H2_PING = 6,
	DW_H2_GOAWAY = 7,
	DW_H2_WINDOW_UPDATE = 8,
	DW_H2_CONTINUATION = 9,
};

/* SETTINGS_MAX_FRAME_SIZE until a peer says otherwise (RFC 9113 6.5.2) */
#define DW_H2_DEFAULT_MAX_FRAME 16384

#define DW_H2_F_ACK 0x1
#define DW_H2_F_PADDED 0x8
#define DW_H2_F_PRIORITY 0x20

/* Which end of the connection a direction's bytes come from. */
enum dw_h2_side { DW_H2_CLIENT = 0, DW_H2_SERVER = 1 };

/* What dw_h2_took() says of the bytes it was given. */
enum dw_h2_step {
	DW_H2_MORE = 0,		/* go on: give it what dw_h2_need() asks for */
	DW_H2_FRAME = 1,	/* a frame's header (and peek) is complete: dw_h2_frame_of() */
	DW_H2_BAD = -1,		/* these are not HTTP/2 frames: the parser lost step */
};

/*
 * One direction's place in the byte stream. seq is the TCP sequence number
 * of the next byte the walker has not been given: an event that starts
 * elsewhere is a repeat (bytes walked already: a partial send sent again, a
 * peek read again) or a gap (bytes that went by unseen), which the caller
 * checks with dw_h2_skip().
 */
struct dw_h2_dir {
	__u32 seq;
	__u32 left;		/* payload bytes of the current frame still to pass over */
	__u8 pre;		/* the client's direction: preface bytes still to match (24 .. 0) */
	__u8 have;		/* bytes of buf collected for the current frame (or the preface) */
	__u8 need;		/* bytes of buf the current frame needs: its header, then its peek */
	__u8 parsed;		/* the current frame's header is parsed (need is final) */
	__u8 side;		/* enum dw_h2_side */
	__u8 frames;		/* frames walked, saturating: the first must be SETTINGS */
	__u8 pad[2];
	/*
	 * The preface, or a frame header and its peek: 25 bytes at the most,
	 * but 64 of room, so that the BPF verifier, which bounds an offset
	 * (have, masked to 31) and a length (at most 31) each on its own, can
	 * prove a copy into buf stays inside it.
	 */
	__u8 buf[64];
};

_Static_assert(DW_H2_HDR_LEN + DW_H2_PEEK <= sizeof(((struct dw_h2_dir *)0)->buf),
	       "a frame header and its peek fit in buf");

/* A frame the walker has the header of (and its first payload bytes, if it reads them). */
struct dw_h2_frame {
	__u32 len;
	__u32 id;
	__u8 type;
	__u8 flags;
	__u8 npeek;
	__u8 pad;
	const __u8 *peek;
};

/* A direction starts at seq: the client's with the preface, the server's with a frame. */
static __always_inline void dw_h2_dir_init(struct dw_h2_dir *d, __u32 seq, enum dw_h2_side side)
{
	__builtin_memset(d, 0, sizeof(*d));
	d->seq = seq;
	d->side = side;
	d->pre = side == DW_H2_CLIENT ? DW_H2_PREFACE_LEN : 0;
	d->need = side == DW_H2_CLIENT ? DW_H2_PREFACE_LEN : DW_H2_HDR_LEN;
}

/*
 * How many payload bytes of a frame are worth reading: a server's HEADERS
 * (its :status, up to 16 bytes past padding and priority), a server's
 * GOAWAY (the last stream id it will answer). Nothing else.
 */
static __always_inline __u32 dw_h2_peek_len(__u8 type, __u32 len, __u8 side)
{
	__u32 want = 0;

	if (side == DW_H2_SERVER && type == DW_H2_HEADERS)
		want = DW_H2_PEEK;
	else if (side == DW_H2_SERVER && type == DW_H2_GOAWAY)
		want = 4;
	return want < len ? want : len;
}

/*
 * Whether a frame header can stand where it stands: the lengths RFC 9113
 * fixes for each type, the stream id it must (not) have, and SETTINGS
 * first in each direction. Unknown types are legal (extensions) and pass,
 * up to the default SETTINGS_MAX_FRAME_SIZE (16 384: a larger one needs a
 * peer that raised it, for a frame nobody here reads). A parser out of
 * step reads payload as headers, which sooner or later fails one of these;
 * text read as a header is an unknown type of megabytes.
 */
static __always_inline bool dw_h2_header_ok(__u32 len, __u8 type, __u8 flags, __u32 id, __u8 first)
{
	if (first && (type != DW_H2_SETTINGS || (flags & DW_H2_F_ACK)))
		return false;
	switch (type) {
	case DW_H2_DATA:
	case DW_H2_HEADERS:
	case DW_H2_CONTINUATION:
	case DW_H2_PUSH_PROMISE:
		return id != 0;
	case DW_H2_PRIORITY:
		return id != 0 && len == 5;
	case DW_H2_RST_STREAM:
		return id != 0 && len == 4;
	case DW_H2_SETTINGS:
		return id == 0 && len % 6 == 0 && (!(flags & DW_H2_F_ACK) || len == 0);
	case DW_H2_PING:
		return id == 0 && len == 8;
	case DW_H2_GOAWAY:
		return id == 0 && len >= 8;
	case DW_H2_WINDOW_UPDATE:
		return len == 4;
	}
	return len <= DW_H2_DEFAULT_MAX_FRAME;
}

/*
 * What the walker needs next: n bytes collected into *dst (the preface, a
 * header, a peek), or, with *dst 0, n bytes passed over (a payload). A
 * frame whose payload is done starts the next one here.
 */
static __always_inline __u32 dw_h2_need(struct dw_h2_dir *d, __u8 **dst)
{
	if (d->parsed && d->have >= d->need && !d->left) {
		d->have = 0;
		d->need = DW_H2_HDR_LEN;
		d->parsed = 0;
	}
	if (d->have < d->need) {
		*dst = d->buf + (d->have & 31);
		return d->need - d->have;
	}
	*dst = 0;
	return d->left;
}

/*
 * Byte i of the client's connection preface. From three constants rather
 * than an array: a static array lands in a read-only section of its own
 * whose offsets libbpf's static linker (1.1) gets wrong in the BTF it
 * writes (the kernel then refuses the object), and the constants cost no
 * memory access either.
 */
static __always_inline __u8 dw_h2_preface_byte(__u32 i)
{
	__u64 w = i < 8 ? 0x5448202a20495250ULL : i < 16 ? 0xa0d302e322f5054ULL : 0xa0d0a0d4d530a0dULL;

	return w >> (8 * (i % 8));
}

/* The first n (0..8) bytes of an 8-byte word: a mask. */
static __always_inline __u64 dw_h2_mask(__s32 n)
{
	if (n <= 0)
		return 0;
	return n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
}

static __always_inline __u64 dw_h2_word(const __u8 *p)
{
	__u64 w = 0;

	for (int i = 7; i >= 0; i--)
		w = w << 8 | p[i];
	return w;
}

/*
 * The preface bytes collected so far are the preface's; once it is whole,
 * the frames begin. Three word compares, not a byte loop: the verifier
 * walks this at every step of a walk.
 */
static __always_inline int dw_h2_preface_step(struct dw_h2_dir *d)
{
	__s32 have = d->have;
	__u64 diff;

	diff = (dw_h2_word(d->buf) ^ 0x5448202a20495250ULL) & dw_h2_mask(have);
	diff |= (dw_h2_word(d->buf + 8) ^ 0x0a0d302e322f5054ULL) & dw_h2_mask(have - 8);
	diff |= (dw_h2_word(d->buf + 16) ^ 0x0a0d0a0d4d530a0dULL) & dw_h2_mask(have - 16);
	if (diff)
		return DW_H2_BAD;
	if (have < DW_H2_PREFACE_LEN)
		return DW_H2_MORE;
	d->pre = 0;
	d->have = 0;
	d->need = DW_H2_HDR_LEN;
	return DW_H2_MORE;
}

static __always_inline int dw_h2_header_step(struct dw_h2_dir *d)
{
	__u32 len = (__u32)d->buf[0] << 16 | (__u32)d->buf[1] << 8 | d->buf[2];
	__u32 id = ((__u32)d->buf[5] << 24 | (__u32)d->buf[6] << 16 | (__u32)d->buf[7] << 8 |
		    d->buf[8]) & 0x7fffffff;
	__u32 peek;

	if (!dw_h2_header_ok(len, d->buf[3], d->buf[4], id, !d->frames))
		return DW_H2_BAD;
	if (d->frames < 255)
		d->frames++;
	peek = dw_h2_peek_len(d->buf[3], len, d->side);
	d->parsed = 1;
	d->need = DW_H2_HDR_LEN + peek;
	d->left = len - peek;
	return d->have >= d->need ? DW_H2_FRAME : DW_H2_MORE;
}

/* n bytes were collected (or passed over) as dw_h2_need() asked: enum dw_h2_step. */
static __always_inline int dw_h2_took(struct dw_h2_dir *d, __u32 n)
{
	d->seq += n;
	if (d->have >= d->need) {
		d->left -= n < d->left ? n : d->left;
		return DW_H2_MORE;
	}
	d->have += n;
	if (d->have < d->need)
		return d->pre ? dw_h2_preface_step(d) : DW_H2_MORE;
	if (d->pre)
		return dw_h2_preface_step(d);
	if (!d->parsed)
		return dw_h2_header_step(d);
	return DW_H2_FRAME;
}

/* The frame dw_h2_took() just said is complete. */
static __always_inline void dw_h2_frame_of(const struct dw_h2_dir *d, struct dw_h2_frame *f)
{
	f->len = (__u32)d->buf[0] << 16 | (__u32)d->buf[1] << 8 | d->buf[2];
	f->type = d->buf[3];
	f->flags = d->buf[4];
	f->id = ((__u32)d->buf[5] << 24 | (__u32)d->buf[6] << 16 | (__u32)d->buf[7] << 8 |
		 d->buf[8]) & 0x7fffffff;
	f->npeek = d->need - DW_H2_HDR_LEN;
	f->peek = d->buf + DW_H2_HDR_LEN;
}

/*
 * An event's bytes start at TCP sequence number seq and run for len bytes:
 * how many of them to skip because they were walked already (a send the
 * kernel took only part of, sent again; a peek, read again); -1 if bytes
 * before them went by unseen (a gap: the walker cannot find its place).
 */
static __always_inline __s64 dw_h2_skip(const struct dw_h2_dir *d, __u32 seq, __u32 len)
{
	__s32 behind = (__s32)(d->seq - seq);

	if (behind < 0)
		return -1;
	return (__u32)behind < len ? (__u32)behind : len;
}

/* ---- What a frame says about calls ---- */

/*
 * The first value byte of a Huffman-coded :status is a 5xx one: '5' is the
 * 6-bit code 011011 (RFC 7541 Appendix B); '0' to '2' have 5-bit codes, '3'
 * to '9' 6-bit ones, so the first byte's top 6 bits say it alone.
 */
#define DW_HUFFMAN_5 0x1b

/*
 * Whether a response HEADERS frame's first bytes (peek, n of them) carry a
 * :status of 5xx that the kernel can read without HPACK state: the static
 * table's "500" (index 14), or a literal value with an indexed :status name
 * (8-14). Padding and priority fields come first; so may dynamic table
 * size updates (001xxxxx), which are passed over. Anything else (a :status
 * from the dynamic table, a header block cut short) reads as not 5xx.
 */
static __always_inline bool dw_h2_status_5xx(const __u8 *peek, __u32 n, __u8 flags)
{
	__u32 off = 0, idx;
	__u8 b, vlen;

	if (flags & DW_H2_F_PADDED)
		off++;
	if (flags & DW_H2_F_PRIORITY)
		off += 5;
	for (int i = 0; i < 2; i++) {
		if (off >= n || off >= DW_H2_PEEK || (peek[off] & 0xe0) != 0x20)
			break;
		/* a size update of 31 or more takes continuation bytes (7 bits each) */
		if ((peek[off++] & 0x1f) == 0x1f)
			for (int j = 0; j < 3 && off < n && off < DW_H2_PEEK && (peek[off++] & 0x80); j++)
				;
	}
	if (off >= n || off >= DW_H2_PEEK)
		return false;
	b = peek[off];
	if (b & 0x80)
		return (b & 0x7f) == 14;
	if ((b & 0xc0) == 0x40)
		idx = b & 0x3f;		/* literal with incremental indexing */
	else if ((b & 0xe0) == 0x00)
		idx = b & 0x0f;		/* literal without indexing, never indexed (0001xxxx) */
	else
		return false;
	if (idx < 8 || idx > 14 || off + 2 >= n || off + 2 >= DW_H2_PEEK)
		return false;
	vlen = peek[off + 1];
	if (vlen & 0x80)
		return (peek[off + 2] >> 2) == DW_HUFFMAN_5;
	return vlen >= 1 && peek[off + 2] == '5';
}

/* GOAWAY's last stream id, from its peek (4 bytes). */
static __always_inline __u32 dw_h2_goaway_last(const struct dw_h2_frame *f)
{
	if (f->npeek < 4)
		return 0x7fffffff;
	return ((__u32)f->peek[0] << 24 | (__u32)f->peek[1] << 16 | (__u32)f->peek[2] << 8 |
		f->peek[3]) & 0x7fffffff;
}

/* What a frame does to the calls on its connection (dw_h2_action). */
enum dw_h2_act {
	DW_H2_ACT_NONE = 0,
	DW_H2_ACT_OPEN,		/* a call starts on stream id */
	DW_H2_ACT_ANSWER,	/* stream id's first response byte: completed */
	DW_H2_ACT_FAIL,		/* stream id failed (the server reset it, or a 5xx) */
	DW_H2_ACT_CANCEL,	/* the client reset stream id: failed, cancelled */
	DW_H2_ACT_GOAWAY,	/* the server answers no stream above id: those fail */
};

/*
 * The call-level meaning of a frame, from the side that sent it. A stream
 * starts at the client's HEADERS on an odd id newer than any it opened
 * (newest: the newest so far; a HEADERS on an older one is trailers); it
 * completes at the server's first HEADERS or DATA on it and fails at the
 * server's RST_STREAM, a 5xx :status or GOAWAY. SETTINGS, PING,
 * WINDOW_UPDATE, PRIORITY, CONTINUATION and PUSH_PROMISE are never calls.
 */
static __always_inline int dw_h2_action(const struct dw_h2_frame *f, __u8 side, __u32 newest)
{
	if (side == DW_H2_CLIENT) {
		if (f->type == DW_H2_HEADERS && (f->id & 1) && f->id > newest)
			return DW_H2_ACT_OPEN;
		return f->type == DW_H2_RST_STREAM ? DW_H2_ACT_CANCEL : DW_H2_ACT_NONE;
	}
	switch (f->type) {
	case DW_H2_HEADERS:
		return dw_h2_status_5xx(f->peek, f->npeek, f->flags) ? DW_H2_ACT_FAIL : DW_H2_ACT_ANSWER;
	case DW_H2_DATA:
		return DW_H2_ACT_ANSWER;
	case DW_H2_RST_STREAM:
		return DW_H2_ACT_FAIL;
	case DW_H2_GOAWAY:
		return DW_H2_ACT_GOAWAY;
	}
	return DW_H2_ACT_NONE;
}

/* ---- The streams of a connection ---- */

/*
 * A connection's open streams: DW_H2_STREAMS slots, a stream's home slot
 * (id / 2) % DW_H2_STREAMS and the DW_H2_PROBES after it. Client stream
 * ids grow by 2, so streams opened together sit in neighbouring slots and
 * a long-lived one is passed over only by the stream DW_H2_STREAMS later.
 * A stream that finds no free slot in its window is counted
 * (streams_untracked), not timed.
 */
struct dw_h2_stream {
	__u32 id;		/* 0: free */
	__u32 pend;		/* its pending-table entry + 1; 0: none */
	__u64 start_ns;		/* 0: not started, or ended (being freed) */
	/*
	 * Answered before its start was seen: when (bit 0 set: failed). The
	 * syscalls backend walks a send at its exit, and another thread may
	 * read the answer and walk it first; the start, when it comes, ends
	 * the call at once, timed exactly.
	 */
	__u64 early_ns;
};

/*
 * Where an event's walk stands in the event's bytes (streams.bpf.h): the
 * BPF side keeps it here, in map memory, not on its stack, so that the
 * verifier, which follows a stack value's range from one bpf_loop step to
 * the next and must see the steps converge, sees none change.
 */
struct dw_h2_cursor {
	__u64 at;		/* user address of the next byte, or its offset in the skb */
	__u64 iov;		/* address of the next iovec */
	__u32 seg;		/* bytes left in the current piece (a buffer, an iovec, the skb's part) */
	__u32 left;		/* bytes of the event left */
	__u32 skip;		/* bytes to pass over first: walked already */
	__u32 nseg;		/* iovecs left */
	__u32 goaway;		/* the lowest last stream id of the GOAWAYs walked */
	__u8 kind;		/* where the bytes are */
	__u8 bad;		/* the walk lost step */
	/*
	 * A count the walk owes: a frame claims or frees its stream's slot at
	 * once and leaves the counting (the destination's rows, its caller's,
	 * the pending table) to the walk's next step.
	 */
	__u8 owed;		/* enum h2_owed (streams.bpf.h) */
	__u8 owed_outcome;	/* enum call_outcome */
	__u64 owed_start;	/* the call's start */
	__u64 owed_end;		/* its end */
	__u32 owed_slot;	/* a start: its stream slot */
	__u32 owed_pend;	/* an end: its pending-table entry, to give back */
	/*
	 * The server's header-block frame being copied to the daemon
	 * (bpf/h2/hblock.bpf.h, issue 33): which, how far, and what its stream's
	 * call was when the frame ended it.
	 */
	__u64 hb_start;
	__u64 hb_end;
	__u32 hb_stream;
	__u32 hb_len;		/* the frame's payload length */
	__u32 hb_off;		/* payload bytes passed so far (the peek among them) */
	__u8 hb_on;		/* the current frame is one to copy */
	__u8 hb_type;
	__u8 hb_flags;
	__u8 hb_npeek;		/* peek bytes still to go out with the next record */
	__u8 hb_flags2;		/* DW_HB_* (hblock.h) */
	__u8 hb_pad[3];
};

/* A connection's HTTP/2 state, made when its first bytes are HTTP/2's. */
struct dw_h2_conn {
	struct dw_h2_dir tx;	/* what this host sends */
	struct dw_h2_dir rx;	/* what it receives */
	struct dw_h2_cursor tx_cur, rx_cur;
	__u32 newest;		/* the newest stream id the client opened */
	__u32 hb_seq;		/* header-block records of the server's direction so far (hblock.h) */
	__u64 hb_id;		/* the connection's number in those records; 0 until the first */
	struct dw_h2_stream s[DW_H2_STREAMS];
};

static __always_inline __u32 dw_h2_home(__u32 id)
{
	return (id >> 1) % DW_H2_STREAMS;
}

static __always_inline __u32 dw_h2_probe(__u32 id, __u32 i)
{
	return (dw_h2_home(id) + i) % DW_H2_STREAMS;
}

#endif /* DEPWATCH_H2_H */
