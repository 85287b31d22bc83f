// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTTP/1 status-line reader (bpf/answer/http1.h), built on the host from the
 * header the BPF object is built from: status lines as nginx, curl's peers
 * and python's http.server send them, every prefix of them, 1xx, and what
 * is not a status line (counted as such, never a status).
 */
#include "dwtest.h"

#include <string.h>

#include "answer/http1.h"

static int line(const char *s)
{
	return dw_http1_line((const __u8 *)s, (__u32)strlen(s));
}

static void test_real_lines(void **state)
{
	(void)state;
	/* nginx 1.22: `return 503;` */
	assert_int_equal(line("HTTP/1.1 503 Service Temporarily Unavailable\r\nServer: nginx"), 503);
	assert_int_equal(line("HTTP/1.1 200 OK\r\n"), 200);
	/* python3 http.server answers HTTP/1.0 */
	assert_int_equal(line("HTTP/1.0 404 File not found\r\n"), 404);
	assert_int_equal(line("HTTP/1.1 429 Too Many Requests\r\n"), 429);
	assert_int_equal(line("HTTP/1.1 302 Found\r\n"), 302);
	/* no reason phrase, no space before the CRLF (RFC 9112 4 allows the empty reason) */
	assert_int_equal(line("HTTP/1.1 500 \r\n"), 500);
	assert_int_equal(line("HTTP/1.1 500\r\n"), 500);
	assert_int_equal(line("HTTP/1.1 599 x"), 599);
	/* exactly 12 bytes: all the line that matters */
	assert_int_equal(line("HTTP/1.1 204"), 204);
	assert_int_equal(dw_http1_class(503), 5);
	assert_int_equal(dw_http1_class(200), 2);
}

static void test_interim(void **state)
{
	(void)state;
	assert_int_equal(line("HTTP/1.1 100 Continue\r\n\r\n"), DW_HTTP1_INTERIM);
	assert_int_equal(line("HTTP/1.1 103 Early Hints\r\n"), DW_HTTP1_INTERIM);
	assert_int_equal(line("HTTP/1.1 101 Switching Protocols\r\n"), DW_HTTP1_INTERIM);
}

static int final(const char *s)
{
	return dw_http1_final((const __u8 *)s, (__u32)strlen(s));
}

/* nginx answers Expect: 100-continue with its 1xx and the final answer in one read, often */
static void test_final_after_interim(void **state)
{
	(void)state;
	assert_int_equal(final("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\n"), 503);
	assert_int_equal(final("HTTP/1.1 200 OK\r\n"), 200);
	/* the final line cut: unknown, not a status */
	assert_int_equal(final("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 5"), DW_HTTP1_SHORT);
	/* a 1xx alone, or one whose head is longer than the look */
	assert_int_equal(final("HTTP/1.1 100 Continue\r\n\r\n"), DW_HTTP1_SHORT);
	assert_int_equal(final("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\nHTTP/1.1 200 OK\r\n"),
			 DW_HTTP1_INTERIM);
	assert_int_equal(final("HTTP/1.1 100 Continue\r\n\r\nGARBAGE-------"), DW_HTTP1_NOT);
}

/* Every prefix of a good line is SHORT, never a status nor BAD. */
static void test_prefixes(void **state)
{
	const char *s = "HTTP/1.1 503 Service Unavailable\r\n";

	(void)state;
	for (unsigned n = 0; n < DW_HTTP1_LINE_MIN; n++)
		assert_int_equal(dw_http1_line((const __u8 *)s, n), DW_HTTP1_SHORT);
	for (unsigned n = DW_HTTP1_LINE_MIN; n <= strlen(s); n++)
		assert_int_equal(dw_http1_line((const __u8 *)s, n), 503);
}

static void test_not_and_bad(void **state)
{
	(void)state;
	/* not a response: a request, TLS, HTTP/2's SETTINGS, binary */
	assert_int_equal(line("GET / HTTP/1.1\r\n"), DW_HTTP1_NOT);
	assert_int_equal(line("\x16\x03\x01\x02\x00\x01"), DW_HTTP1_NOT);
	assert_int_equal(dw_http1_line((const __u8 *)"\x00\x00\x12\x04\x00\x00\x00\x00\x00", 9), DW_HTTP1_NOT);
	assert_int_equal(line("http/1.1 200 OK\r\n"), DW_HTTP1_NOT);
	assert_int_equal(line("H"), DW_HTTP1_SHORT);
	assert_int_equal(line("X"), DW_HTTP1_NOT);
	/* a status line's start, then the grammar breaks: counted bad */
	assert_int_equal(line("HTTP/2 200\r\n\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 20 OK\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 2000 OK\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 600 x\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 099 x\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1  200 OK\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1-200 OK\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 5x3 x\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.x 200 x\r\n"), DW_HTTP1_BAD);
	assert_int_equal(line("HTTP/1.1 2"), DW_HTTP1_SHORT);
	assert_int_equal(line("HTTP/1.1 2a"), DW_HTTP1_BAD);
}

static void test_fail_set(void **state)
{
	__u64 fail[DW_STATUS_WORDS] = {};

	(void)state;
	/* 5xx and 429: the bits of 500..599 and 429 */
	for (int s = 500; s <= 599; s++)
		fail[(s - 100) / 64] |= 1ULL << ((s - 100) % 64);
	fail[(429 - 100) / 64] |= 1ULL << ((429 - 100) % 64);
	assert_true(dw_status_fails(fail, 503));
	assert_true(dw_status_fails(fail, 500));
	assert_true(dw_status_fails(fail, 599));
	assert_true(dw_status_fails(fail, 429));
	assert_false(dw_status_fails(fail, 428));
	assert_false(dw_status_fails(fail, 404));
	assert_false(dw_status_fails(fail, 200));
	assert_false(dw_status_fails(fail, 99));
	assert_false(dw_status_fails(fail, 600));
	assert_false(dw_status_fails(fail, -3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_lines), cmocka_unit_test(test_interim),
		cmocka_unit_test(test_prefixes), cmocka_unit_test(test_not_and_bad),
		cmocka_unit_test(test_fail_set), cmocka_unit_test(test_final_after_interim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
