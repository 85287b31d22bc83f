/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The rate limit of one source of log lines (a dependency's alerts, its
 * abort_after lines): a token bucket, a burst of 5, then one every 12 s.
 * Pure: the time is the caller's.
 */
#ifndef DW_RATELIMIT_H
#define DW_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define DW_RATELIMIT_BURST 5.0
#define DW_RATELIMIT_REFILL_NS 12000000000ULL

struct dw_ratelimit {
	double tokens;
	uint64_t tokens_ns;
	unsigned suppressed;		/* lines refused since the last one that went out */
};

/* Full: a new source may say 5 things at once. */
void dw_ratelimit_init(struct dw_ratelimit *r);

/*
 * Whether a line may go out at now_ns (a token taken); must: it goes out
 * anyway. If it goes, *suppressed is how many were refused before it.
 */
bool dw_ratelimit_take(struct dw_ratelimit *r, uint64_t now_ns, bool must, unsigned *suppressed);

#endif /* DW_RATELIMIT_H */
