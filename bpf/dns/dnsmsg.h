/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS messages, as far as matching a query to its answer needs (RFC 1035
 * 4.1): the 12-byte header (id, QR, opcode, RCODE, the counts) and the one
 * question, which an answer repeats. The question is folded into a hash
 * (FNV-1a over the name's bytes, ASCII letters folded to lower case because
 * some resolvers answer 0x20-randomised names in another case, then the
 * type and class), so a query and its answer meet on (socket, resolver,
 * id, question) and an answer to another question under a guessed id
 * matches nothing.
 *
 * Pure (dwcompat.h): the caller copies the message's first DW_DNS_WINDOW
 * bytes (fewer if the message is shorter; len says how many are there)
 * and hands them over. Only what is inside those bytes is read: a question
 * whose name runs past the window is DW_DNS_LONG (not tracked, counted),
 * never guessed. Built into the BPF object (bpf/dns/dnscall.bpf.h) and, on the
 * host, into tests/unit/test_dns.c, which also fuzzes it.
 */
#ifndef DEPWATCH_DNS_H
#define DEPWATCH_DNS_H

#include "depwatch.h"

/*
 * DNS over UDP (issue 35, bpf/dns/dnscall.bpf.h): each query outstanding, from
 * its send until its answer or its dns_timeout, keyed by what its answer
 * must repeat: the socket (its kernel address), the resolver's address and
 * port, the id and the question (bpf/dns/dnsmsg.h's hash). A bounded hash:
 * full, a query is not timed (dns_table_full).
 */
#define DW_DNS_QUERIES_DEFAULT 8192
#define DW_DNS_TIMEOUT_DEFAULT_NS 5000000000ULL	/* glibc's: timeout:5 */
#define DW_DNS_PORT_DEFAULT 53

struct dw_dns_key {
	/*
	 * The client socket's kernel address: what every program that sees the
	 * socket can name it by (the syscalls backend's tracepoints can neither
	 * read a cookie that was never made nor make one). A socket's queries
	 * leave the table at its close (dns_closed) or their dns_timeout.
	 */
	__u64 sock;
	__u32 qhash;		/* the question (bpf/dns/dnsmsg.h) */
	__u16 id;
	__u16 port;		/* the resolver's, host byte order */
	__u8 addr[16];		/* the resolver's, IPv4 (and IPv4-mapped) in the first 4 bytes */
};

struct dw_dns_query {
	__u64 start_ns;		/* the query's send (CLOCK_MONOTONIC) */
	__u64 timeout_ns;	/* its dependency's dns_timeout */
	__u32 slot;		/* the resolver's destination slot */
	__u32 caller;		/* its caller row, 0: none */
	__u32 pend;		/* its pending-table entry + 1, 0: none */
	__u32 pad;
};

/*
 * A UDP socket's queries (dns_socks, by the socket's address, written at
 * each query; bpf/dns/dnscall.bpf.h): the keys of the last DW_DNS_SOCK_KEYS
 * queries it sent that went into the table. Read at its close, and at an
 * answer whose sender is not known (a read of an unconnected socket that
 * asked for no address). glibc sends A and AAAA on one socket per
 * nameserver, so two cover it; a socket with more outstanding has its
 * older ones end at dns_timeout (at a close). A key whose query was
 * answered or swept is simply no longer in the table; sock 0: no key yet.
 */
#define DW_DNS_SOCK_KEYS 2

struct dw_dns_sock {
	struct dw_dns_key keys[DW_DNS_SOCK_KEYS];
	__u32 next;		/* keys[next % DW_DNS_SOCK_KEYS] is written next */
	__u32 pad;
};

#define DW_DNS_HDR 12
/* bytes of a message read: the header and a question whose name is at most 110 bytes on the wire */
#define DW_DNS_WINDOW 128

/* RCODEs (RFC 1035 4.1.1) that matter to the call model */
#define DW_DNS_NOERROR 0
#define DW_DNS_SERVFAIL 2
#define DW_DNS_NXDOMAIN 3
#define DW_DNS_REFUSED 5

enum dw_dns_read {
	DW_DNS_OK = 0,
	DW_DNS_SHORT,		/* fewer bytes than a header and a whole question */
	DW_DNS_MALFORMED,	/* not a standard query's shape: opcode, counts, a pointer or bad label in the question */
	DW_DNS_LONG,		/* the question's name runs past DW_DNS_WINDOW: not read */
};

struct dw_dns_msg {
	__u32 qhash;		/* the question (name, type, class), see above */
	__u16 id;
	__u8 qr;		/* 1: an answer */
	__u8 rcode;
};

static __always_inline __u32 dw_dns_fold(__u32 h, __u8 c)
{
	if (c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	return (h ^ c) * 16777619u;
}

/*
 * Reads the header and question of the message in buf (DW_DNS_WINDOW bytes,
 * of which the first len are the message's). Anything but DW_DNS_OK leaves
 * *m unusable: the caller tracks nothing for it.
 */
static __always_inline enum dw_dns_read dw_dns_read(const __u8 *buf, __u32 len, struct dw_dns_msg *m)
{
	__u32 skip = 0, end = 0, h = 2166136261u;

	if (len > DW_DNS_WINDOW)
		len = DW_DNS_WINDOW;
	if (len < DW_DNS_HDR + 5)
		return DW_DNS_SHORT;
	/* opcode QUERY (0), exactly one question: what stub resolvers send and resolvers answer */
	if ((buf[2] & 0x78) != 0 || buf[4] != 0 || buf[5] != 1)
		return DW_DNS_MALFORMED;
	m->id = (__u16)(buf[0] << 8 | buf[1]);
	m->qr = buf[2] >> 7;
	m->rcode = buf[3] & 0x0f;
	/*
	 * skip: bytes of the current label still to come (0: this byte is a
	 * length). A count down, not the next length's offset: the verifier
	 * then sees few distinct states per byte (Linux 6.1's gave up at its
	 * limit on the offset form).
	 */
	for (__u32 i = DW_DNS_HDR; i < DW_DNS_WINDOW; i++) {
		__u8 c;

		if (i >= len)
			return DW_DNS_SHORT;
		c = buf[i];
		if (skip) {
			skip--;
		} else {
			if (c == 0) {
				end = i + 1;
				break;
			}
			/* a question is never compressed; 0x40 and 0x80 are no label length either */
			if (c & 0xc0)
				return DW_DNS_MALFORMED;
			skip = c;
		}
		h = dw_dns_fold(h, c);
	}
	if (!end)
		return DW_DNS_LONG;
	/* the root alone is a name too; a name is at most 255 bytes: the window is shorter */
	if (end + 4 > DW_DNS_WINDOW)
		return DW_DNS_LONG;
	if (end + 4 > len)
		return DW_DNS_SHORT;
	for (__u32 i = 0; i < 4; i++) {
		__u32 at = end + i;

		barrier_var(at);
		if (at >= DW_DNS_WINDOW)
			return DW_DNS_LONG;
		h = (h ^ buf[at]) * 16777619u;
	}
	m->qhash = h;
	return DW_DNS_OK;
}

#endif /* DEPWATCH_DNS_H */
