/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where OpenSSL's reads and writes are probed (issue 46). A uprobe on an instruction the kernel
 * cannot emulate is single-stepped, a debug trap a hit that a virtual machine's host intercepts
 * (KVM does): 17.8-19.2 us a hit against 4.9-6.5 us for one it emulates, a push among them
 * (bench/RESULTS.md). SSL_read and SSL_write begin with `sub $n,%rsp` (single-stepped), and a
 * uretprobe must sit on a function's first instruction (the return address is at the stack
 * pointer only there). Both are thin wrappers: OpenSSL 1.1.1 and 3.x's SSL_read, SSL_read_ex
 * (and SSL_read_early_data) call one inner function, ssl_read_internal(s, buf, num, &readbytes),
 * which begins with pushes; the same for the writes and ssl_write_internal. Its signature is
 * SSL_read_ex's, so SSL_read_ex's programs serve it, and one probe pair there times both API
 * forms. Hidden in the library (no symbol), it is found by decoding the wrappers. Pure: the
 * bytes come from the caller.
 */
#ifndef DW_SSLINNER_H
#define DW_SSLINNER_H

#include <stddef.h>
#include <stdint.h>

/* The argument registers a wrapper must hand its callee as it got them. */
enum {
	DW_SSL_PASS_RDI = 1u << 0,	/* the SSL * */
	DW_SSL_PASS_RSI = 1u << 1,	/* the buffer */
	DW_SSL_PASS_RDX = 1u << 2,	/* its length (the _ex forms: a size_t) */
	DW_SSL_PASS_RCX = 1u << 3,	/* where the count goes (the _ex forms) */
};

/* Instructions decoded before a wrapper's call: OpenSSL 3.0's SSL_read needs 9. */
#define DW_SSL_WRAP_MAX 16

/*
 * The inner function both forms of one operation reach: from the _ex form (ex[0..exlen) at
 * exaddr), a straight run with all four arguments untouched to its first call; from the plain
 * form (plain[0..plainlen) at plainaddr), with the SSL * and the buffer untouched (it turns its
 * int length into a size_t and passes its own count's address), past its negative-length test,
 * to a first call to the same place. 0 with *inner that address; -1 when the code is not of
 * that shape (BoringSSL and LibreSSL implement the API functions themselves): the wrappers are
 * probed then.
 */
int dw_ssl_find_inner(const uint8_t *ex, size_t exlen, uint64_t exaddr, const uint8_t *plain, size_t plainlen,
		      uint64_t plainaddr, uint64_t *inner);

#endif
