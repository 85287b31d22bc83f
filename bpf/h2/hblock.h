/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Header blocks to the daemon (issue 33): the server's HEADERS and
 * CONTINUATION payloads of an HTTP/2 connection, copied bounded by the
 * stream layer's walker (bpf/h2/hblock.bpf.h) into the hblocks ring buffer,
 * one record per piece, in the connection's order, for the daemon's HPACK
 * inflater (user/logic/outcome/h2answer.c). Shared by the BPF side and the daemon.
 *
 * A record carries up to DW_HB_PEEK bytes the walker had collected already
 * (the frame's first payload bytes, its peek) and up to DW_HB_BODY bytes
 * after them; its place in the frame (off) and the connection's record
 * number (seq, counted also for records the ring had no room for) let the
 * daemon see any gap: then the connection's outcomes are unknown.
 */
#ifndef DEPWATCH_HBLOCK_H
#define DEPWATCH_HBLOCK_H

#define DW_HB_PEEK 16
#define DW_HB_BODY 224
/* payload bytes of one frame copied at the most: a longer frame is cut, a gap to the daemon */
#define DW_HB_FRAME_MAX 4096
#define DW_HB_RING_BYTES (4U << 20)

/* struct dw_hb_rec.flags2 */
#define DW_HB_KFAILED 0x1	/* the kernel already counted this stream failed (RST, a static 5xx) */
#define DW_HB_ENDED 0x2		/* this frame ended the stream's call: start_ns, end_ns are its */

struct dw_hb_rec {
	__u64 conn_id;		/* the connection's HTTP/2 state, numbered at its first record */
	__u64 start_ns;		/* DW_HB_ENDED: the call's start and end (CLOCK_MONOTONIC) */
	__u64 end_ns;
	__u32 seq;		/* the connection's record number: 0, 1, ... */
	__u32 stream;		/* the frame's stream id */
	__u32 slot;		/* the destination's slot */
	__u32 frame_len;	/* the frame's payload length */
	__u32 off;		/* where this record's bytes start in the payload */
	__u8 type;		/* HEADERS (1) or CONTINUATION (9) */
	__u8 flags;		/* the frame's flags */
	__u8 npeek;		/* bytes in peek */
	__u8 flags2;		/* DW_HB_* */
	__u8 role;		/* enum dw_role of the connection */
	__u8 pad;
	__u16 nbody;		/* bytes in body */
	__u8 peek[DW_HB_PEEK];
	__u8 body[DW_HB_BODY];
};

#endif /* DEPWATCH_HBLOCK_H */
