// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/base/jsonw.h"

/* Output of one writer call on a fresh buffer, as a malloc'd string. */
static char *out;

static int teardown(void **state)
{
	(void)state;
	free(out);
	out = NULL;
	return 0;
}

static const char *json(const char *s)
{
	struct dw_buf b = {0};

	dw_json_str(&b, s);
	free(out);
	out = strdup(b.data ? b.data : "");
	dw_buf_free(&b);
	return out;
}

static const char *jsonn(const char *s, size_t n)
{
	struct dw_buf b = {0};

	dw_json_strn(&b, s, n);
	free(out);
	out = strdup(b.data ? b.data : "");
	dw_buf_free(&b);
	return out;
}

static const char *text(const char *s, size_t n)
{
	struct dw_buf b = {0};

	dw_escape_text(&b, s, n);
	free(out);
	out = strdup(b.data ? b.data : "");
	dw_buf_free(&b);
	return out;
}

static const char *num(double v, int decimals)
{
	struct dw_buf b = {0};

	dw_json_num(&b, v, decimals);
	free(out);
	out = strdup(b.data ? b.data : "");
	dw_buf_free(&b);
	return out;
}

static void test_json_plain(void **state)
{
	(void)state;
	assert_string_equal(json(""), "\"\"");
	assert_string_equal(json("abc"), "\"abc\"");
	assert_string_equal(json("a b/c'd~"), "\"a b/c'd~\"");
	assert_string_equal(json(NULL), "null");
}

static void test_json_quotes_backslashes(void **state)
{
	(void)state;
	assert_string_equal(json("a\"b"), "\"a\\\"b\"");
	assert_string_equal(json("a\\b"), "\"a\\\\b\"");
	assert_string_equal(json("\\\""), "\"\\\\\\\"\"");
}

static void test_json_controls(void **state)
{
	(void)state;
	assert_string_equal(json("a\nb"), "\"a\\u000ab\"");
	assert_string_equal(json("\t\r"), "\"\\u0009\\u000d\"");
	assert_string_equal(json("\x01\x1f"), "\"\\u0001\\u001f\"");
	assert_string_equal(json("\x7f"), "\"\\u007f\"");
	assert_string_equal(json("\x1b[31mred\x1b[0m"), "\"\\u001b[31mred\\u001b[0m\"");
}

static void test_json_valid_utf8(void **state)
{
	(void)state;
	assert_string_equal(json("h\xc3\xa9llo"), "\"h\xc3\xa9llo\"");	       /* é */
	assert_string_equal(json("\xc2\x80"), "\"\xc2\x80\"");		       /* U+0080 */
	assert_string_equal(json("\xe2\x82\xac"), "\"\xe2\x82\xac\"");	       /* € */
	assert_string_equal(json("\xef\xbf\xbf"), "\"\xef\xbf\xbf\"");	       /* U+FFFF */
	assert_string_equal(json("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\""); /* 😀 */
	assert_string_equal(json("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
}

static void test_json_invalid_utf8(void **state)
{
	(void)state;
	assert_string_equal(json("\x80"), "\"\\u0080\"");
	assert_string_equal(json("\xff"), "\"\\u00ff\"");
	assert_string_equal(json("a\376b"), "\"a\\u00feb\"");
	assert_string_equal(json("\xc0\xaf"), "\"\\u00c0\\u00af\"");		/* overlong '/' */
	assert_string_equal(json("\xc1\xbf"), "\"\\u00c1\\u00bf\"");		/* overlong */
	assert_string_equal(json("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\""); /* overlong */
	assert_string_equal(json("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\""); /* surrogate */
	assert_string_equal(json("\xf0\x80\x80\xaf"), "\"\\u00f0\\u0080\\u0080\\u00af\"");
	assert_string_equal(json("\xf4\x90\x80\x80"),
			    "\"\\u00f4\\u0090\\u0080\\u0080\""); /* > U+10FFFF */
	assert_string_equal(json("\xf5\x80\x80\x80"), "\"\\u00f5\\u0080\\u0080\\u0080\"");
	assert_string_equal(json("\xe2\x82"), "\"\\u00e2\\u0082\""); /* truncated */
	assert_string_equal(json("\xe2\x82x"), "\"\\u00e2\\u0082x\"");
	assert_string_equal(json("\xe2x\xac"), "\"\\u00e2x\\u00ac\"");
	assert_string_equal(json("\xc3\xa9\xa9"), "\"\xc3\xa9\\u00a9\""); /* stray continuation */
}

/* Every single byte, against the rule written out independently. */
static void test_json_every_byte(void **state)
{
	char in[2] = {0}, want[16];
	unsigned c;

	(void)state;
	for (c = 1; c < 256; c++) {
		in[0] = (char)c;
		if (c == '"' || c == '\\')
			snprintf(want, sizeof(want), "\"\\%c\"", c);
		else if (c < 0x20 || c >= 0x7f)
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		else
			snprintf(want, sizeof(want), "\"%c\"", c);
		assert_string_equal(json(in), want);
	}
}

static void test_json_strn(void **state)
{
	char *comm;

	(void)state;
	assert_string_equal(jsonn("abcdef", 3), "\"abc\"");
	assert_string_equal(jsonn("ab\0cd", 5), "\"ab\"");
	assert_string_equal(jsonn("abc", 0), "\"\"");
	/* a cut through a UTF-8 sequence leaves invalid bytes */
	assert_string_equal(jsonn("\xe2\x82\xac", 2), "\"\\u00e2\\u0082\"");
	assert_string_equal(jsonn("\xe2\x82\xac", 3), "\"\xe2\x82\xac\"");
	/* not NUL-terminated, as a full comm is: ASan catches any read past it */
	comm = malloc(16);
	assert_non_null(comm);
	memset(comm, 'x', 16);
	comm[15] = '\xc3';
	assert_string_equal(jsonn(comm, 16), "\"xxxxxxxxxxxxxxx\\u00c3\"");
	free(comm);
}

static void test_json_num(void **state)
{
	(void)state;
	assert_string_equal(num(1.5, 3), "1.500");
	assert_string_equal(num(2.7, 0), "3");
	assert_string_equal(num(-1, 1), "-1.0");
	assert_string_equal(num(0, 2), "0.00");
	assert_string_equal(num(123456789.125, 3), "123456789.125");
	assert_string_equal(num(1.5, -3), "2");
	assert_string_equal(num(0.25, 100), "0.25000000000000000");
	assert_string_equal(num(NAN, 2), "null");
	assert_string_equal(num(INFINITY, 2), "null");
	assert_string_equal(num(-INFINITY, 2), "null");
}

static void test_escape_text(void **state)
{
	(void)state;
	assert_string_equal(text("abc", 3), "abc");
	assert_string_equal(text("a b", 3), "a\\x20b");
	assert_string_equal(text("k=v", 3), "k\\x3dv");
	assert_string_equal(text("\"q\"", 3), "\\x22q\\x22");
	assert_string_equal(text("a\\b", 3), "a\\\\b");
	assert_string_equal(text("\x1b[2J", 4), "\\x1b[2J");
	assert_string_equal(text("a\nb", 3), "a\\x0ab");
	assert_string_equal(text("\x7f", 1), "\\x7f");
	assert_string_equal(text("\xc3\xa9", 2), "\\xc3\\xa9");
	assert_string_equal(text("abcdef", 2), "ab");
	assert_string_equal(text("ab\0cd", 5), "ab");
	assert_string_equal(text(NULL, 5), "");
}

/* Undoes dw_escape_text(); -1 on anything it should not have produced. */
static int unescape_text(const char *s, unsigned char *dst, size_t max)
{
	unsigned v;
	size_t n = 0;

	while (*s && n < max) {
		if (*s != '\\') {
			if (*s <= ' ' || *s >= 0x7f || *s == '"' || *s == '=')
				return -1;
			dst[n++] = *s++;
		} else if (s[1] == '\\') {
			dst[n++] = '\\';
			s += 2;
		} else if (s[1] == 'x' && sscanf(s + 2, "%2x", &v) == 1) {
			dst[n++] = v;
			s += 4;
		} else {
			return -1;
		}
	}
	return *s ? -1 : (int)n;
}

static void test_escape_text_round_trip(void **state)
{
	unsigned char in[256], back[256];
	unsigned i;

	(void)state;
	for (i = 0; i < 255; i++)
		in[i] = i + 1; /* every byte but NUL */
	text((const char *)in, 255);
	assert_int_equal(unescape_text(out, back, sizeof(back)), 255);
	assert_memory_equal(back, in, 255);
}

static void test_buf_printf_putc(void **state)
{
	struct dw_buf b = {0};

	(void)state;
	dw_buf_printf(&b, "%d-%s", 42, "x");
	dw_buf_putc(&b, '!');
	dw_buf_printf(&b, "%s", "");
	assert_string_equal(b.data, "42-x!");
	assert_int_equal(b.len, 5);
	assert_int_equal(b.oom, 0);
	dw_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	dw_buf_free(&b);
}

static void test_buf_growth(void **state)
{
	struct dw_buf b = {0};
	char *big;
	size_t i;

	(void)state;
	for (i = 0; i < 10000; i++)
		dw_buf_putc(&b, 'a' + i % 26);
	big = malloc(20001);
	assert_non_null(big);
	memset(big, 'z', 20000);
	big[20000] = '\0';
	dw_buf_printf(&b, "<%s>", big);
	assert_int_equal(b.len, 10000 + 20002);
	assert_int_equal(strlen(b.data), b.len);
	assert_true(b.cap > b.len);
	for (i = 0; i < 10000; i++)
		assert_int_equal(b.data[i], 'a' + i % 26);
	assert_int_equal(b.data[10000], '<');
	assert_memory_equal(b.data + 10001, big, 20000);
	assert_string_equal(b.data + 30001, ">");
	assert_int_equal(b.oom, 0);
	free(big);
	dw_buf_free(&b);
}

/* A long string with an escape every few bytes: the length is known ahead. */
static void test_json_long(void **state)
{
	struct dw_buf b = {0};
	char s[8193];
	size_t i, want = 2;

	(void)state;
	for (i = 0; i < 8192; i++) {
		s[i] = i % 7 == 0 ? '\n' : i % 11 == 0 ? '"' : 'k';
		want += s[i] == '\n' ? 6 : s[i] == '"' ? 2 : 1;
	}
	s[8192] = '\0';
	dw_json_str(&b, s);
	assert_int_equal(b.len, want);
	assert_int_equal(strlen(b.data), want);
	assert_memory_equal(b.data, "\"\\u000akkkkkk\\u000akkk\\\"kk", 26);
	dw_buf_free(&b);
}

static void test_oom_is_sticky(void **state)
{
	struct dw_buf b = {0};

	(void)state;
	dw_buf_printf(&b, "ok");
	b.oom = 1;
	dw_buf_putc(&b, 'x');
	dw_buf_printf(&b, "%s", "more");
	dw_json_str(&b, "s");
	assert_int_equal(b.len, 2);
	assert_string_equal(b.data, "ok");
	dw_buf_free(&b);
	assert_int_equal(b.oom, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_json_plain, teardown),
	    cmocka_unit_test_teardown(test_json_quotes_backslashes, teardown),
	    cmocka_unit_test_teardown(test_json_controls, teardown),
	    cmocka_unit_test_teardown(test_json_valid_utf8, teardown),
	    cmocka_unit_test_teardown(test_json_invalid_utf8, teardown),
	    cmocka_unit_test_teardown(test_json_every_byte, teardown),
	    cmocka_unit_test_teardown(test_json_strn, teardown),
	    cmocka_unit_test_teardown(test_json_num, teardown),
	    cmocka_unit_test_teardown(test_escape_text, teardown),
	    cmocka_unit_test_teardown(test_escape_text_round_trip, teardown),
	    cmocka_unit_test(test_buf_printf_putc),
	    cmocka_unit_test(test_buf_growth),
	    cmocka_unit_test(test_json_long),
	    cmocka_unit_test(test_oom_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
