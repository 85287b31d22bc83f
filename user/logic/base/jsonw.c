// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logic/base/jsonw.h"

#define DW_BUF_MIN_CAP 256

static const char hexdig[] = "0123456789abcdef";

void dw_buf_free(struct dw_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Room for need more bytes plus the NUL; false (and oom set) if there is none. */
static bool buf_reserve(struct dw_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : DW_BUF_MIN_CAP;
	char *p;

	if (b->oom)
		return false;
	if (need >= SIZE_MAX / 2 - b->len)
		goto oom;
	if (b->len + need < b->cap)
		return true;
	while (cap <= b->len + need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		goto oom;
	b->data = p;
	b->cap = cap;
	return true;
oom:
	b->oom = 1;
	return false;
}

void dw_buf_write(struct dw_buf *b, const void *p, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void dw_buf_putc(struct dw_buf *b, char c)
{
	dw_buf_write(b, &c, 1);
}

void dw_buf_printf(struct dw_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !buf_reserve(b, n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

static void put_hex_escape(struct dw_buf *b, const char *prefix, unsigned char c)
{
	char esc[8];
	size_t n = strlen(prefix);

	memcpy(esc, prefix, n);
	esc[n++] = hexdig[c >> 4];
	esc[n++] = hexdig[c & 0xf];
	dw_buf_write(b, esc, n);
}

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes, lead byte
 * >= 0x80), or 0. Rejects what RFC 3629 forbids: overlong forms,
 * surrogates, code points above U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* the second byte is narrower where overlongs, surrogates or > U+10FFFF start */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* The bytes of s[0..n) that need no escaping in JSON, up to the first that does. */
static size_t json_plain_run(const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			break;
	return i;
}

void dw_json_strn(struct dw_buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t run;

	if (!s) {
		dw_buf_write(b, "null", 4);
		return;
	}
	n = strnlen(str, n);
	dw_buf_putc(b, '"');
	while (n > 0) {
		run = json_plain_run(s, n);
		if (run == 0 && s[0] >= 0x80)
			run = utf8_len(s, n);
		if (run > 0) {
			dw_buf_write(b, s, run);
		} else if (s[0] == '"' || s[0] == '\\') {
			dw_buf_putc(b, '\\');
			dw_buf_putc(b, s[0]);
			run = 1;
		} else {
			put_hex_escape(b, "\\u00", s[0]);
			run = 1;
		}
		s += run;
		n -= run;
	}
	dw_buf_putc(b, '"');
}

void dw_json_str(struct dw_buf *b, const char *s)
{
	dw_json_strn(b, s, SIZE_MAX);
}

void dw_json_num(struct dw_buf *b, double v, int decimals)
{
	if (!isfinite(v)) {
		dw_buf_write(b, "null", 4);
		return;
	}
	if (decimals < 0)
		decimals = 0;
	if (decimals > 17)
		decimals = 17;
	dw_buf_printf(b, "%.*f", decimals, v);
}

void dw_escape_text(struct dw_buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i;

	if (!s)
		return;
	for (i = 0; i < n && s[i]; i++) {
		if (s[i] == '\\')
			dw_buf_write(b, "\\\\", 2);
		else if (s[i] > 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '=')
			dw_buf_putc(b, s[i]);
		else
			put_hex_escape(b, "\\x", s[i]);
	}
}

void dw_json_field_opt(struct dw_buf *b, const char *key, double v, int decimals)
{
	dw_buf_printf(b, ",\"%s\":", key);
	if (v < 0)
		dw_buf_printf(b, "null");
	else
		dw_json_num(b, v, decimals);
}
