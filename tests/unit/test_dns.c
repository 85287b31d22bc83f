// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The DNS message reader (bpf/dns/dnsmsg.h), built on the host from the header the
 * BPF object is built from: a query and its answer meet on the same id and
 * question hash; the RCODE is read; a message cut short, a question the
 * window cannot hold, other opcodes, compressed or bad labels are refused;
 * and random and mutated bytes never read past the window nor crash (the
 * fuzz run below, under ASan/UBSan, the buffer exactly DW_DNS_WINDOW long).
 */
#include "dwtest.h"

#include <stdlib.h>
#include <string.h>

#include "dns/dnsmsg.h"

/* dig +noedns www.example.com A: id 0x1a2b, RD */
static const __u8 query_a[] = {
	0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
	0x00, 0x01, 0x00, 0x01,
};

static enum dw_dns_read read_of(const __u8 *msg, size_t len, struct dw_dns_msg *m)
{
	__u8 *buf = calloc(1, DW_DNS_WINDOW);	/* exactly the window: ASan sees any read past it */
	enum dw_dns_read r;

	memcpy(buf, msg, len < DW_DNS_WINDOW ? len : DW_DNS_WINDOW);
	r = dw_dns_read(buf, (__u32)len, m);
	free(buf);
	return r;
}

/* the answer: QR, RA, the rcode, one answer record after the question */
static size_t answer_of(const __u8 *q, size_t qlen, __u8 rcode, __u8 *out)
{
	static const __u8 rr[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 216, 34 };

	memcpy(out, q, qlen);
	out[2] |= 0x80;
	out[3] = 0x80 | rcode;
	out[7] = rcode == DW_DNS_NOERROR;
	memcpy(out + qlen, rr, sizeof(rr));
	return qlen + sizeof(rr);
}

static void test_query_and_answer(void **state)
{
	struct dw_dns_msg q = { 0 }, a = { 0 };
	__u8 ans[256];
	size_t n = answer_of(query_a, sizeof(query_a), DW_DNS_NOERROR, ans);

	(void)state;
	assert_int_equal(read_of(query_a, sizeof(query_a), &q), DW_DNS_OK);
	assert_int_equal(q.id, 0x1a2b);
	assert_int_equal(q.qr, 0);
	assert_int_equal(read_of(ans, n, &a), DW_DNS_OK);
	assert_int_equal(a.qr, 1);
	assert_int_equal(a.id, q.id);
	assert_int_equal(a.qhash, q.qhash);
	assert_int_equal(a.rcode, DW_DNS_NOERROR);
	n = answer_of(query_a, sizeof(query_a), DW_DNS_NXDOMAIN, ans);
	assert_int_equal(read_of(ans, n, &a), DW_DNS_OK);
	assert_int_equal(a.rcode, DW_DNS_NXDOMAIN);
	n = answer_of(query_a, sizeof(query_a), DW_DNS_SERVFAIL, ans);
	assert_int_equal(read_of(ans, n, &a), DW_DNS_OK);
	assert_int_equal(a.rcode, DW_DNS_SERVFAIL);
}

/* The question tells A from AAAA on one id; case does not matter (0x20 randomisation). */
static void test_question_hash(void **state)
{
	struct dw_dns_msg q = { 0 }, o = { 0 };
	__u8 b[sizeof(query_a)];

	(void)state;
	assert_int_equal(read_of(query_a, sizeof(query_a), &q), DW_DNS_OK);
	memcpy(b, query_a, sizeof(b));
	b[sizeof(b) - 3] = 28;	/* AAAA */
	assert_int_equal(read_of(b, sizeof(b), &o), DW_DNS_OK);
	assert_int_not_equal(o.qhash, q.qhash);
	memcpy(b, query_a, sizeof(b));
	b[13] = 'W', b[18] = 'X';
	assert_int_equal(read_of(b, sizeof(b), &o), DW_DNS_OK);
	assert_int_equal(o.qhash, q.qhash);
	memcpy(b, query_a, sizeof(b));
	b[14] = 'q';	/* another name */
	assert_int_equal(read_of(b, sizeof(b), &o), DW_DNS_OK);
	assert_int_not_equal(o.qhash, q.qhash);
}

static void test_cut_short(void **state)
{
	struct dw_dns_msg m;

	(void)state;
	for (size_t len = 0; len < sizeof(query_a); len++)
		assert_int_equal(read_of(query_a, len, &m), DW_DNS_SHORT);
}

static void test_not_a_query(void **state)
{
	struct dw_dns_msg m;
	__u8 b[sizeof(query_a)];

	(void)state;
	memcpy(b, query_a, sizeof(b));
	b[2] |= 5 << 3;	/* UPDATE */
	assert_int_equal(read_of(b, sizeof(b), &m), DW_DNS_MALFORMED);
	memcpy(b, query_a, sizeof(b));
	b[5] = 2;	/* two questions */
	assert_int_equal(read_of(b, sizeof(b), &m), DW_DNS_MALFORMED);
	memcpy(b, query_a, sizeof(b));
	b[12] = 0xc0;	/* a pointer in the question */
	assert_int_equal(read_of(b, sizeof(b), &m), DW_DNS_MALFORMED);
	memcpy(b, query_a, sizeof(b));
	b[16] = 0x41;	/* an extended label type */
	assert_int_equal(read_of(b, sizeof(b), &m), DW_DNS_MALFORMED);
}

/* A name longer than the window holds is not read, whatever follows. */
static void test_long_name(void **state)
{
	struct dw_dns_msg m;
	__u8 b[300] = { 0x12, 0x34, 0x01, 0x00, 0x00, 0x01 };
	size_t at = DW_DNS_HDR;

	(void)state;
	for (int i = 0; i < 4; i++) {
		b[at] = 60;
		memset(b + at + 1, 'a', 60);
		at += 61;
	}
	b[at++] = 0;
	b[at + 1] = 1, b[at + 3] = 1;
	assert_int_equal(read_of(b, at + 4, &m), DW_DNS_LONG);
	/* a name that ends exactly where its type would not fit */
	memset(b + DW_DNS_HDR, 0, sizeof(b) - DW_DNS_HDR);
	b[DW_DNS_HDR] = 63;
	memset(b + DW_DNS_HDR + 1, 'b', 63);
	b[DW_DNS_HDR + 64] = 48;	/* the root label at 125: the type at 126 to 129 */
	memset(b + DW_DNS_HDR + 65, 'c', 48);
	assert_int_equal(read_of(b, 200, &m), DW_DNS_LONG);
}

/* Random and mutated messages: never a crash, never a read past the window (ASan). */
static void test_fuzz(void **state)
{
	uint64_t seed = 0x5eed;
	__u8 b[DW_DNS_WINDOW + 64];
	int ok = 0;

	(void)state;
	for (int round = 0; round < 200000; round++) {
		struct dw_dns_msg m;
		size_t len = dwt_rand(&seed) % sizeof(b);

		if (round & 1) {
			memcpy(b, query_a, sizeof(query_a));
			for (int k = 0; k < 3; k++)
				b[dwt_rand(&seed) % sizeof(query_a)] = (__u8)dwt_rand(&seed);
			len = sizeof(query_a) - 4 + dwt_rand(&seed) % 8;
		} else {
			for (size_t i = 0; i < len; i++)
				b[i] = (__u8)dwt_rand(&seed);
		}
		ok += read_of(b, len, &m) == DW_DNS_OK;
	}
	assert_true(ok > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_query_and_answer),
	    cmocka_unit_test(test_question_hash),
	    cmocka_unit_test(test_cut_short),
	    cmocka_unit_test(test_not_a_query),
	    cmocka_unit_test(test_long_name),
	    cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
