/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/1.x responses as call outcomes: the status line at a response's
 * first bytes (RFC 9112 4: "HTTP/1.1 503 ..."), read where a call's answer
 * is (outcome.bpf.h: the sock backend's copy to the reader, the syscalls
 * backend's receive buffer, an inbound answer's send) and, later, from
 * TLS plaintext by the same entry.
 *
 * dw_http1_line() looks at no more than DW_HTTP1_PEEK bytes and decides
 * from the first DW_HTTP1_LINE_MIN ("HTTP/1.x NNN" is 12); it never
 * guesses: bytes that are not a status line are NOT (this connection is no
 * HTTP/1 client's) or BAD (they start like one and break the grammar), and
 * too few bytes are SHORT (the reader took less than 12: the outcome stays
 * unknown, nothing is invented). A 1xx (100 Continue, 103 Early Hints) is
 * INTERIM: not the answer; the call's outcome is the next status line.
 *
 * Pure (dwcompat.h): no BPF helper, no I/O, no loop the verifier cannot
 * bound. Built into the BPF object and, on the host, into
 * tests/unit/test_http1.c and tests/fuzz/fuzz_http1.c.
 */
#ifndef DEPWATCH_HTTP1_H
#define DEPWATCH_HTTP1_H

#include "depwatch.h"

/* Bytes a reader copies from the answer's start: the line's first 12, and a 1xx before it. */
#define DW_HTTP1_PEEK 64
#define DW_HTTP1_LINE_MIN 12

/* What dw_http1_line() says, besides a final status 200-599. */
enum dw_http1_read {
	DW_HTTP1_SHORT = -1,	/* fewer than 12 bytes, all a status line's so far */
	DW_HTTP1_NOT = -2,	/* not "HTTP/": no HTTP/1 response */
	DW_HTTP1_BAD = -3,	/* "HTTP/" then no "1.x NNN " */
	DW_HTTP1_INTERIM = -4,	/* a 1xx: the answer is still to come */
};

static __always_inline int dw_http1_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

/*
 * The status of the response line at p[0..n): 200-599, or one of enum
 * dw_http1_read. Only the first 12 bytes matter; the reason phrase is not
 * read (it may be empty, RFC 9112 4: "HTTP/1.1 503 \r\n").
 */
static __always_inline int dw_http1_line(const __u8 *p, __u32 n)
{
	__u32 i;
	int code;

	/*
	 * "HTTP/1." d SP d d d: check what is there, decide once all of it is.
	 * A constant bound, n tested inside: the verifier sees each p[i] at
	 * i < 12 whatever clang makes of n.
	 */
	for (i = 0; i < DW_HTTP1_LINE_MIN; i++) {
		__u8 c;
		int ok;

		if (i >= n)
			break;
		c = p[i];
		switch (i) {
		case 0: ok = c == 'H'; break;
		case 1: ok = c == 'T'; break;
		case 2: ok = c == 'T'; break;
		case 3: ok = c == 'P'; break;
		case 4: ok = c == '/'; break;
		case 5: ok = c == '1'; break;
		case 6: ok = c == '.'; break;
		case 8: ok = c == ' '; break;
		case 9: ok = c >= '1' && c <= '5'; break;
		default: ok = dw_http1_digit(c); break;
		}
		if (!ok)
			return i < 5 ? DW_HTTP1_NOT : DW_HTTP1_BAD;
	}
	if (n < DW_HTTP1_LINE_MIN)
		return DW_HTTP1_SHORT;
	/* after the code: the reason's space, or the line's end (a server that sends no reason) */
	if (n > DW_HTTP1_LINE_MIN && p[12] != ' ' && p[12] != '\r' && p[12] != '\n')
		return DW_HTTP1_BAD;
	code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	return code < 200 ? DW_HTTP1_INTERIM : code;
}

/*
 * The answer's final status in p[0..n), n at most DW_HTTP1_PEEK: its
 * status line's, or, after a 1xx whose head ends within these bytes (a
 * "100 Continue" and its blank line), the next line's. INTERIM: a 1xx
 * whose end, or the next line, is beyond them.
 */
static __always_inline int dw_http1_final(const __u8 *p, __u32 n)
{
	int r = dw_http1_line(p, n);
	__u32 i;

	if (r != DW_HTTP1_INTERIM)
		return r;
	if (n > DW_HTTP1_PEEK)
		n = DW_HTTP1_PEEK;
	/* i stays under PEEK - 16: the next line's 12 bytes are within the buffer, as the verifier sees it */
	for (i = DW_HTTP1_LINE_MIN; i < DW_HTTP1_PEEK - 16 && i + 4 <= n; i++)
		if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
			return dw_http1_line(p + i + 4, n - i - 4);
	return DW_HTTP1_INTERIM;
}

/* An answer's class, 2 to 5 (2xx ... 5xx) for a status 200-599. */
static __always_inline int dw_http1_class(int status)
{
	return status / 100;
}

/*
 * Whether status (100-599) is in a failure set: one bit per code, bit
 * (status - 100) of fail[] (the dependency's failure_status, user/logic/outcome/outcome.h).
 */
#define DW_STATUS_WORDS 8
static __always_inline int dw_status_fails(const __u64 *fail, int status)
{
	__u32 b;

	if (status < 100 || status > 599)
		return 0;
	b = (__u32)(status - 100);
	return (fail[(b >> 6) & (DW_STATUS_WORDS - 1)] >> (b & 63)) & 1;
}

#endif /* DEPWATCH_HTTP1_H */
