/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A protocol's goodbye (issue 50): a request whose protocol answers it by
 * closing the connection, recognised from its first bytes where an
 * outbound call starts (callmodel.bpf.h, outbound_start()). Such a call
 * that the connection's close ends is dropped, not failed: no call at all
 * (doc/callmodel.md, "Goodbyes are no calls"). One that is answered after
 * all (memcached's binary Quit is) completes as any call.
 *
 * The goodbyes, one line each: X(name, total length, what its first bytes
 * are). A goodbye is a whole send of exactly that length whose first bytes
 * match; a send of another length is a request like any other.
 * - MySQL and MariaDB COM_QUIT: a command packet of one byte, 3-byte
 *   little-endian length 1, sequence 0, command 0x01.
 * - PostgreSQL Terminate: 'X', then the 4-byte big-endian length 4 (the
 *   client closes behind it; the server may close first on loopback).
 * - memcached's text quit: "quit\r\n" (or "quit\n", which it accepts).
 * - memcached's binary Quit and QuitQ: the 24-byte request header, magic
 *   0x80, opcode 0x07 or 0x17, no key, no extras, raw data type.
 *
 * Pure (dwcompat.h): no BPF helper, no loop. At most DW_GOODBYE_PEEK bytes
 * are looked at. Built into the BPF object and, on the host, into
 * tests/unit/test_goodbye.c.
 */
#ifndef DEPWATCH_GOODBYE_H
#define DEPWATCH_GOODBYE_H

#include "dwcompat.h"

/* Bytes read of a request's first buffer: enough for every goodbye's recognisable part. */
#define DW_GOODBYE_PEEK 8

#define DW_GOODBYES(X)									\
	X(MYSQL_QUIT, 5, p[0] == 1 && p[1] == 0 && p[2] == 0 && p[3] == 0 && p[4] == 0x01)	\
	X(PG_TERMINATE, 5, p[0] == 'X' && p[1] == 0 && p[2] == 0 && p[3] == 0 && p[4] == 4)	\
	X(MEMCACHED_QUIT, 6, p[0] == 'q' && p[1] == 'u' && p[2] == 'i' && p[3] == 't' &&	\
			     p[4] == '\r' && p[5] == '\n')					\
	X(MEMCACHED_QUIT_LF, 5, p[0] == 'q' && p[1] == 'u' && p[2] == 'i' && p[3] == 't' &&	\
				p[4] == '\n')							\
	X(MEMCACHED_BIN_QUIT, 24, p[0] == 0x80 && (p[1] == 0x07 || p[1] == 0x17) &&		\
				  p[2] == 0 && p[3] == 0 && p[4] == 0 && p[5] == 0)

/* Whether a send of len bytes may be a goodbye: the only sends whose first bytes are read. */
static __always_inline bool dw_goodbye_size(__u32 len)
{
#define DW_GOODBYE_SIZE(name, glen, test) len == (glen) ||
	return DW_GOODBYES(DW_GOODBYE_SIZE) false;
#undef DW_GOODBYE_SIZE
}

/*
 * The length of the goodbye whose first bytes are p[0..n) (n of them
 * readable, at most DW_GOODBYE_PEEK looked at), 0 if they are none's. The
 * caller compares it with the send's whole length.
 */
static __always_inline __u32 dw_goodbye_len(const __u8 *p, __u32 n)
{
	if (n < 5)
		return 0;
#define DW_GOODBYE_TEST(name, len, test)						\
	if ((n >= 6 || (len) == 5) && (test))						\
		return len;
	DW_GOODBYES(DW_GOODBYE_TEST)
#undef DW_GOODBYE_TEST
	return 0;
}

/*
 * A goodbye a server reads in two: MySQL's and MariaDB's servers read a
 * packet's 4-byte header, then its body. COM_QUIT's header says length 1,
 * sequence 0; its body is the command, 0x01. (dw_conn.answer.bye: DW_BYE_HEAD
 * between the two reads, bpf/core/conn.bpf.h.)
 */
#define DW_GOODBYE_HEAD 4

static __always_inline bool dw_goodbye_head(const __u8 *p, __u32 n)
{
	return n == DW_GOODBYE_HEAD && p[0] == 1 && p[1] == 0 && p[2] == 0 && p[3] == 0;
}

static __always_inline bool dw_goodbye_body(const __u8 *p, __u32 n)
{
	return n == 1 && p[0] == 0x01;
}

/* Whether a send of len bytes whose first bytes are p[0..n) is a goodbye. */
static __always_inline bool dw_goodbye(const __u8 *p, __u32 n, __u32 len)
{
	__u32 want = dw_goodbye_len(p, n);

	return want && want == len;
}

#endif /* DEPWATCH_GOODBYE_H */
