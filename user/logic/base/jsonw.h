/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A growable memory buffer, a small JSON writer on it, and escaping of
 * untrusted text (command names, addresses) for terminals and syslog.
 *
 * A zeroed struct dw_buf is an empty buffer. data, when not NULL, is always
 * NUL-terminated. When memory runs out, oom is set and every later write
 * is dropped, so callers check once at the end instead of after each call.
 */
#ifndef DW_JSONW_H
#define DW_JSONW_H

#include <stddef.h>

struct dw_buf {
	char *data;
	size_t len, cap;
	int oom;
};

void dw_buf_free(struct dw_buf *b);
void dw_buf_printf(struct dw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dw_buf_putc(struct dw_buf *b, char c);
void dw_buf_write(struct dw_buf *b, const void *p, size_t n);

/*
 * s as a JSON string: quoted; '"' and '\' backslash-escaped; bytes below
 * 0x20, 0x7f, and bytes that are not part of valid UTF-8 as \u00xx of the
 * byte. Valid UTF-8 is copied as it is. NULL is written as null.
 */
void dw_json_str(struct dw_buf *b, const char *s);

/* Same, for at most n bytes of s, stopping early at a NUL. */
void dw_json_strn(struct dw_buf *b, const char *s, size_t n);

/*
 * v with that many decimals (0..17). Non-finite values have no JSON form
 * and come out as null; sentinels such as -1 are the caller's business.
 */
void dw_json_num(struct dw_buf *b, double v, int decimals);

/* ,"key":v with that many decimals, or ,"key":null when v is negative (no value). */
void dw_json_field_opt(struct dw_buf *b, const char *key, double v, int decimals);

/*
 * At most n bytes of s (stopping at a NUL) for a terminal or a key=value
 * syslog line: printable ASCII kept, '\' as "\\", everything else, and
 * '"', '=' and space, as \xhh.
 */
void dw_escape_text(struct dw_buf *b, const char *s, size_t n);

#endif /* DW_JSONW_H */
