// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The goodbye recogniser (bpf/answer/goodbye.h), built on the host from the
 * header the BPF object is built from: the goodbyes as Debian's clients
 * send them (MariaDB's COM_QUIT, libpq's Terminate, memcached's quit),
 * their prefixes, and requests that start alike and are none.
 */
#include "dwtest.h"

#include <string.h>

#include "answer/goodbye.h"

/* What the kernel does: at most DW_GOODBYE_PEEK bytes read, compared with the send's length. */
static bool bye(const void *p, size_t len)
{
	__u32 n = len < DW_GOODBYE_PEEK ? (__u32)len : DW_GOODBYE_PEEK;

	return dw_goodbye_size((__u32)len) && dw_goodbye((const __u8 *)p, n, (__u32)len);
}

static void test_goodbyes(void **state)
{
	/* MariaDB's mysql_close(): 3-byte length 1, sequence 0, COM_QUIT */
	static const __u8 mysql_quit[] = { 0x01, 0x00, 0x00, 0x00, 0x01 };
	/* libpq's PQfinish(): Terminate, 'X' and its length 4 */
	static const __u8 pg_terminate[] = { 'X', 0x00, 0x00, 0x00, 0x04 };
	/* memcached's binary Quit and QuitQ: the 24-byte header, nothing after it */
	__u8 bin_quit[24] = { 0x80, 0x07 }, bin_quitq[24] = { 0x80, 0x17 };

	(void)state;
	assert_true(bye(mysql_quit, sizeof(mysql_quit)));
	assert_true(bye(pg_terminate, sizeof(pg_terminate)));
	assert_true(bye("quit\r\n", 6));
	assert_true(bye("quit\n", 5));
	assert_true(bye(bin_quit, sizeof(bin_quit)));
	assert_true(bye(bin_quitq, sizeof(bin_quitq)));
	assert_int_equal(dw_goodbye_len(mysql_quit, 5), 5);
	assert_int_equal(dw_goodbye_len((const __u8 *)"quit\r\n", 6), 6);
	assert_int_equal(dw_goodbye_len(bin_quit, DW_GOODBYE_PEEK), 24);
}

static void test_not_goodbyes(void **state)
{
	/* COM_QUERY "SELECT 1": length 9, sequence 0, 0x03 */
	static const __u8 mysql_query[] = { 0x09, 0x00, 0x00, 0x00, 0x03, 'S', 'E', 'L', 'E' };
	/* COM_PING: a one-byte command the server answers */
	static const __u8 mysql_ping[] = { 0x01, 0x00, 0x00, 0x00, 0x0e };
	/* COM_QUIT with a sequence number other than 0: not a command packet's start */
	static const __u8 mysql_seq1[] = { 0x01, 0x00, 0x00, 0x01, 0x01 };
	/* PostgreSQL Sync ('S', length 4): answered by ReadyForQuery */
	static const __u8 pg_sync[] = { 'S', 0x00, 0x00, 0x00, 0x04 };
	/* memcached binary Get (0x00) and Quit with a key length */
	__u8 bin_get[24] = { 0x80, 0x00 }, bin_quit_key[24] = { 0x80, 0x07, 0x00, 0x01 };
	/* a response's magic (0x81), not a request's */
	__u8 bin_resp[24] = { 0x81, 0x07 };
	__u8 longer[7] = { 0x01, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00 };

	(void)state;
	assert_false(bye(mysql_query, sizeof(mysql_query)));
	assert_false(bye(mysql_ping, sizeof(mysql_ping)));
	assert_false(bye(mysql_seq1, sizeof(mysql_seq1)));
	assert_false(bye(pg_sync, sizeof(pg_sync)));
	assert_false(bye(bin_get, sizeof(bin_get)));
	assert_false(bye(bin_quit_key, sizeof(bin_quit_key)));
	assert_false(bye(bin_resp, sizeof(bin_resp)));
	/* the goodbye's bytes, then more in the same send: a request like any other */
	assert_false(bye(longer, sizeof(longer)));
	assert_false(bye("quit\r\nget k\r\n", 13));
	assert_false(bye("QUIT\r\n", 6));		/* Redis and SMTP answer theirs (+OK, 221) */
	assert_false(bye("quit", 4));
	assert_false(bye("quits\n", 6));
	assert_false(bye("GET / HTTP/1.1\r\n", 16));
	/* the goodbye's length, other bytes */
	assert_false(bye("abcde", 5));
	assert_false(bye("", 0));
	/* a goodbye's first bytes in a send of another length (the exit compares) */
	assert_false(dw_goodbye((const __u8 *)"quit\r\n", 6, 7));
}

static void test_prefixes(void **state)
{
	static const char *whole[] = { "\x01\x00\x00\x00\x01", "X\x00\x00\x00\x04", "quit\r\n", "quit\n" };
	static const __u32 lens[] = { 5, 5, 6, 5 };

	(void)state;
	/* fewer bytes readable than the goodbye's recognisable part: never one (the first iovec was short) */
	for (size_t i = 0; i < 4; i++)
		for (__u32 n = 0; n < lens[i]; n++)
			assert_int_equal(dw_goodbye_len((const __u8 *)whole[i], n), 0);
	assert_false(dw_goodbye_size(0));
	assert_false(dw_goodbye_size(4));
	assert_true(dw_goodbye_size(5));
	assert_true(dw_goodbye_size(6));
	assert_false(dw_goodbye_size(7));
	assert_true(dw_goodbye_size(24));
	assert_false(dw_goodbye_size(25));
}

static void test_mysql_in_two_reads(void **state)
{
	/* MariaDB's server: the packet's 4-byte header, then its body */
	static const __u8 quit_head[] = { 0x01, 0x00, 0x00, 0x00 }, query_head[] = { 0x09, 0x00, 0x00, 0x00 };
	static const __u8 seq1_head[] = { 0x01, 0x00, 0x00, 0x01 };
	static const __u8 quit_body[] = { 0x01 }, ping_body[] = { 0x0e };

	(void)state;
	assert_true(dw_goodbye_head(quit_head, 4));
	assert_false(dw_goodbye_head(query_head, 4));
	assert_false(dw_goodbye_head(seq1_head, 4));
	assert_false(dw_goodbye_head(quit_head, 3));
	assert_true(dw_goodbye_body(quit_body, 1));
	assert_false(dw_goodbye_body(ping_body, 1));
	assert_false(dw_goodbye_body(quit_body, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goodbyes),
		cmocka_unit_test(test_not_goodbyes),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_mysql_in_two_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
