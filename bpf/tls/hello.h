/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * TLS, as far as the kernel can see it: a connection's first bytes that
 * are a ClientHello, and the protocols it offers by ALPN (RFC 7301), which
 * travel in the clear; and the server's first bytes, a ServerHello, which
 * in TLS 1.2 says in the clear which one it chose (TLS 1.3 moved that into
 * the encrypted EncryptedExtensions). A client that offers h2 and not
 * http/1.1 (gRPC, and any HTTP/2-only client) speaks HTTP/2 or nothing;
 * so does a connection whose TLS 1.2 server chose h2: multiplexed from the
 * first byte, though its frames stay opaque. One that offers both over TLS
 * 1.3 may end up on either; the transport model's overlap test decides
 * (bpf/core/call.bpf.h).
 *
 * Pure (dwcompat.h), and like the frame walker (h2.h) it reads nothing
 * itself: a scan says which bytes of the hello it needs next (offset and
 * length, dw_tls_need), the caller reads them wherever they are (user
 * memory, an skb) and hands them over (dw_tls_took). Built into the BPF
 * object and, on the host, into tests/unit/test_tls.c.
 */
#ifndef DEPWATCH_TLS_H
#define DEPWATCH_TLS_H

#include "depwatch.h"

/* What a hello offers, or a ServerHello chose (struct dw_tls_scan.found). */
#define DW_ALPN_HELLO 1		/* it is a ClientHello or a ServerHello */
#define DW_ALPN_H2 2		/* h2 */
#define DW_ALPN_HTTP1 4		/* http/1.1 */

/* DW_TLS_SMALL, what a multiplexed TLS connection's control frames are: bpf/depwatch.h */
#define DW_TLS_MAX_EXTS 32
#define DW_TLS_MAX_PROTOS 8
/* reads a scan takes at the most: the hello's 5 fields, every extension, every protocol twice */
#define DW_TLS_MAX_STEPS (5 + DW_TLS_MAX_EXTS + 1 + 2 * DW_TLS_MAX_PROTOS)

enum dw_tls_stage {
	DW_TLS_HEADER,		/* record and handshake header: 6 bytes at 0 */
	DW_TLS_SESSION,		/* the session id's length */
	DW_TLS_SUITES,		/* the cipher suites' length (a ClientHello) */
	DW_TLS_COMPRESSION,	/* the compression methods' length (a ClientHello) */
	DW_TLS_EXTS_LEN,	/* the extensions' length */
	DW_TLS_EXT,		/* an extension's type and length */
	DW_TLS_ALPN_LEN,	/* the ALPN list's length */
	DW_TLS_PROTO_LEN,	/* a protocol name's length */
	DW_TLS_PROTO,		/* a protocol name */
	DW_TLS_DONE,
};

/* A scan of one hello: where it stands, and what it found (DW_ALPN_*). */
struct dw_tls_scan {
	__u32 len;	/* bytes of the hello there are (the event's) */
	__u32 off;	/* the next field's offset */
	__u32 end;	/* where what is being read ends: the record, the extensions, the list */
	__u32 plen;	/* DW_TLS_PROTO: the name's length */
	__u8 stage;	/* enum dw_tls_stage */
	__u8 server;	/* a ServerHello */
	__u8 count;	/* extensions, then protocols, read so far */
	__u8 found;	/* DW_ALPN_* */
};

static __always_inline void dw_tls_start(struct dw_tls_scan *s, __u32 len)
{
	__builtin_memset(s, 0, sizeof(*s));
	s->len = len;
}

static __always_inline __u32 dw_tls_u16(const __u8 *b)
{
	return (__u32)b[0] << 8 | b[1];
}

static __always_inline __u32 dw_tls_min(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

/*
 * The next bytes the scan needs: *n (1 to 8) at *off; 0 when it is done
 * (s->found says what it found). Nothing past the event's bytes is asked.
 */
static __always_inline int dw_tls_need(struct dw_tls_scan *s, __u32 *off, __u32 *n)
{
	switch (s->stage) {
	case DW_TLS_HEADER:
		*n = 6;
		break;
	case DW_TLS_SESSION:
	case DW_TLS_COMPRESSION:
	case DW_TLS_PROTO_LEN:
		*n = 1;
		break;
	case DW_TLS_SUITES:
	case DW_TLS_EXTS_LEN:
	case DW_TLS_ALPN_LEN:
		*n = 2;
		break;
	case DW_TLS_EXT:
		*n = 4;
		break;
	case DW_TLS_PROTO:
		*n = s->plen;
		break;
	default:
		return 0;
	}
	*off = s->off;
	if (s->off > s->len || *n > s->len - s->off || *n > 8) {
		s->stage = DW_TLS_DONE;
		return 0;
	}
	return 1;
}

/* The protocol name the scan asked for, in b. */
static __always_inline void dw_tls_proto(struct dw_tls_scan *s, const __u8 *b)
{
	if (s->plen == 2 && b[0] == 'h' && b[1] == '2')
		s->found |= DW_ALPN_H2;
	if (s->plen == 8 && b[0] == 'h' && b[1] == 't' && b[2] == 't' && b[3] == 'p' && b[4] == '/' &&
	    b[5] == '1' && b[6] == '.' && b[7] == '1')
		s->found |= DW_ALPN_HTTP1;
	s->off += s->plen;
	s->stage = DW_TLS_PROTO_LEN;
}

/* An extension's type and length in b: ALPN's body is read, any other passed over. */
static __always_inline void dw_tls_ext(struct dw_tls_scan *s, const __u8 *b)
{
	__u32 elen = dw_tls_u16(b + 2);

	s->off += 4;
	if (dw_tls_u16(b) != 16) {
		s->off += elen;
		s->stage = ++s->count < DW_TLS_MAX_EXTS && s->off + 4 <= s->end ? DW_TLS_EXT : DW_TLS_DONE;
		return;
	}
	s->end = dw_tls_min(s->off + elen, s->end);
	s->count = 0;
	s->stage = DW_TLS_ALPN_LEN;
}

/* The bytes the scan asked for (dw_tls_need), in b. */
static __always_inline void dw_tls_took(struct dw_tls_scan *s, const __u8 *b)
{
	switch (s->stage) {
	case DW_TLS_HEADER:
		/* a handshake record (0x16, version 3.x), a ClientHello (1) or ServerHello (2) */
		if (b[0] != 0x16 || b[1] != 3 || (b[5] != 1 && b[5] != 2) || s->len < 48) {
			s->stage = DW_TLS_DONE;
			return;
		}
		s->found = DW_ALPN_HELLO;
		s->server = b[5] == 2;
		s->end = dw_tls_min(5 + dw_tls_u16(b + 3), s->len);
		/* record header 5, handshake header 4, version 2, random 32 */
		s->off = 43;
		s->stage = DW_TLS_SESSION;
		return;
	case DW_TLS_SESSION:
		/* a ServerHello then has the chosen cipher suite and compression method */
		s->off += 1 + b[0] + (s->server ? 3 : 0);
		s->stage = s->server ? DW_TLS_EXTS_LEN : DW_TLS_SUITES;
		return;
	case DW_TLS_SUITES:
		s->off += 2 + dw_tls_u16(b);
		s->stage = DW_TLS_COMPRESSION;
		return;
	case DW_TLS_COMPRESSION:
		s->off += 1 + b[0];
		s->stage = DW_TLS_EXTS_LEN;
		return;
	case DW_TLS_EXTS_LEN:
		s->end = dw_tls_min(s->off + 2 + dw_tls_u16(b), s->end);
		s->off += 2;
		s->stage = s->off + 4 <= s->end ? DW_TLS_EXT : DW_TLS_DONE;
		return;
	case DW_TLS_EXT:
		dw_tls_ext(s, b);
		return;
	case DW_TLS_ALPN_LEN:
		s->off += 2;
		s->stage = s->off < s->end ? DW_TLS_PROTO_LEN : DW_TLS_DONE;
		return;
	case DW_TLS_PROTO_LEN:
		s->plen = b[0];
		s->off++;
		if (s->off + s->plen > s->end || ++s->count > DW_TLS_MAX_PROTOS) {
			s->stage = DW_TLS_DONE;
			return;
		}
		/* only h2 and http/1.1 matter: other names are passed over unread */
		if (s->plen == 2 || s->plen == 8) {
			s->stage = DW_TLS_PROTO;
			return;
		}
		s->off += s->plen;
		s->stage = s->off < s->end ? DW_TLS_PROTO_LEN : DW_TLS_DONE;
		return;
	case DW_TLS_PROTO:
		dw_tls_proto(s, b);
		if (s->off >= s->end)
			s->stage = DW_TLS_DONE;
		return;
	}
}

/*
 * Whether a TLS connection's first bytes from one end make it HTTP/2 for
 * sure: a client that offers h2 and not http/1.1, or a server that chose
 * h2 (TLS 1.2).
 */
static __always_inline bool dw_tls_h2_only(__u32 alpn, bool from_server)
{
	if (from_server)
		return alpn & DW_ALPN_H2;
	return (alpn & DW_ALPN_H2) && !(alpn & DW_ALPN_HTTP1);
}

#endif /* DEPWATCH_TLS_H */
