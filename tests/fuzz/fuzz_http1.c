// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the HTTP/1 status-line reader (bpf/answer/http1.h): any
 * bytes give a status 200-599 only where the first 12 are "HTTP/1.d DDD"
 * (checked here independently), SHORT only under 12 bytes, and never a
 * read past what it was given (ASan sees the copy's end).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "answer/http1.h"

static int isdig(uint8_t c)
{
	return c >= '0' && c <= '9';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so a read past n is a heap overflow ASan reports */
	uint8_t *p = malloc(size ? size : 1);
	int r;

	if (!p)
		return 0;
	memcpy(p, data, size);
	r = dw_http1_line(p, (__u32)size);
	if (r >= 100) {
		if (size < 12 || memcmp(p, "HTTP/1.", 7) || !isdig(p[7]) || p[8] != ' ')
			abort();
		if (r != (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0') || r < 200 || r > 599)
			abort();
	} else if (r == DW_HTTP1_SHORT) {
		if (size >= 12)
			abort();
	} else if (r == DW_HTTP1_INTERIM) {
		if (size < 12 || p[9] != '1')
			abort();
	} else if (r != DW_HTTP1_NOT && r != DW_HTTP1_BAD) {
		abort();
	}
	/* the final status: a status only where some line of the bytes is one, and in range */
	r = dw_http1_final(p, (__u32)(size > DW_HTTP1_PEEK ? DW_HTTP1_PEEK : size));
	if (r >= 100 && (r < 200 || r > 599))
		abort();
	if (r < 100 && r != DW_HTTP1_SHORT && r != DW_HTTP1_NOT && r != DW_HTTP1_BAD &&
	    r != DW_HTTP1_INTERIM)
		abort();
	free(p);
	return 0;
}
