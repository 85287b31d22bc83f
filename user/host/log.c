// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include "host/log.h"

bool dw_verbose;

void dw_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { [3] = "error: ", [4] = "warning: " };
	va_list ap;

	if (level >= 7 && !dw_verbose)
		return;
	va_start(ap, fmt);
	/* one line at a time: the TLS discovery's thread logs too */
	flockfile(stderr);
	fprintf(stderr, "depwatch: %s", level < 5 ? names[level] : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}
