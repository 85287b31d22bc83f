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
 * (bpf/call.bpf.h).
 *
 * Pure (dwcompat.h): the bytes are read through DW_TLS_READ(src, off, dst,
 * n), which the includer defines (0: read, else: not there) before it
 * includes this header: a probe read of user memory or an skb in the BPF
 * object, a bounded copy in tests/unit/test_tls.c.
 */
#ifndef DEPWATCH_TLS_H
#define DEPWATCH_TLS_H

#include "depwatch.h"

#ifndef DW_TLS_READ
#error "define DW_TLS_READ(src, off, dst, n) before including tls.h"
#endif

/* What a hello offers, or a ServerHello chose (dw_tls_alpn). */
#define DW_ALPN_HELLO 1		/* it is a ClientHello or a ServerHello */
#define DW_ALPN_H2 2		/* h2 */
#define DW_ALPN_HTTP1 4		/* http/1.1 */

/* DW_TLS_SMALL, what a multiplexed TLS connection's control frames are: bpf/depwatch.h */
#define DW_TLS_MAX_EXTS 32
#define DW_TLS_MAX_PROTOS 8

static __always_inline __u32 dw_tls_u16(const __u8 *b)
{
	return (__u32)b[0] << 8 | b[1];
}

/* The ALPN extension's body at off (elen bytes): which protocols it lists. */
static __always_inline __u32 dw_tls_protos(const void *src, __u32 off, __u32 end)
{
	__u32 found = 0;
	__u8 b[8];

	if (off + 2 > end || DW_TLS_READ(src, off, b, 2))
		return 0;
	off += 2;
	for (int i = 0; i < DW_TLS_MAX_PROTOS && off < end; i++) {
		__u32 plen;

		if (DW_TLS_READ(src, off, b, 1))
			break;
		plen = b[0];
		off++;
		if (off + plen > end)
			break;
		if (plen == 2 && !DW_TLS_READ(src, off, b, 2) && b[0] == 'h' && b[1] == '2')
			found |= DW_ALPN_H2;
		if (plen == 8 && !DW_TLS_READ(src, off, b, 8) && b[0] == 'h' && b[1] == 't' &&
		    b[2] == 't' && b[3] == 'p' && b[4] == '/' && b[5] == '1' && b[6] == '.' && b[7] == '1')
			found |= DW_ALPN_HTTP1;
		off += plen;
	}
	return found;
}

/*
 * What the first len bytes of a connection offer, if they are a TLS
 * ClientHello (or chose, if they are a ServerHello): DW_ALPN_* bits, 0 if
 * they are neither. Only the first record is read, and only as much of it
 * as the event holds.
 */
static __always_inline __u32 dw_tls_alpn(const void *src, __u32 len)
{
	__u32 off, end;
	bool server;
	__u8 b[6];

	/* a handshake record (0x16, version 3.x), a ClientHello (1) or ServerHello (2) */
	if (len < 48 || DW_TLS_READ(src, 0, b, 6) || b[0] != 0x16 || b[1] != 3 ||
	    (b[5] != 1 && b[5] != 2))
		return 0;
	server = b[5] == 2;
	end = 5 + dw_tls_u16(b + 3);
	if (end > len)
		end = len;
	/* record header 5, handshake header 4, version 2, random 32: the session id's length */
	off = 43;
	if (DW_TLS_READ(src, off, b, 1))
		return DW_ALPN_HELLO;
	off += 1 + b[0];
	if (server) {
		off += 3;	/* the cipher suite and compression method chosen */
	} else {
		if (DW_TLS_READ(src, off, b, 2))
			return DW_ALPN_HELLO;
		off += 2 + dw_tls_u16(b);	/* cipher suites */
		if (DW_TLS_READ(src, off, b, 1))
			return DW_ALPN_HELLO;
		off += 1 + b[0];		/* compression methods */
	}
	if (DW_TLS_READ(src, off, b, 2))
		return DW_ALPN_HELLO;
	if (off + 2 + dw_tls_u16(b) < end)
		end = off + 2 + dw_tls_u16(b);
	off += 2;
	for (int i = 0; i < DW_TLS_MAX_EXTS && off + 4 <= end; i++) {
		__u32 type, elen;

		if (DW_TLS_READ(src, off, b, 4))
			break;
		type = dw_tls_u16(b);
		elen = dw_tls_u16(b + 2);
		if (type == 16)
			return DW_ALPN_HELLO |
			       dw_tls_protos(src, off + 4, off + 4 + elen < end ? off + 4 + elen : end);
		off += 4 + elen;
	}
	return DW_ALPN_HELLO;
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
