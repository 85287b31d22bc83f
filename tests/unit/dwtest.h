/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by the unit tests: cmocka in the include order Debian's 1.1 needs, and fixtures. */
#ifndef DW_TEST_H
#define DW_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "logic/config/config.h"
#include "logic/depset/dest.h"

/* cmocka 1.1 has no float asserts; these report both values on failure. */
#define assert_double_eq(got, want)                                                                \
	do {                                                                                       \
		double g_ = (got), w_ = (want);                                                    \
		if (!(g_ == w_))                                                                   \
			fail_msg("%s = %.17g, want %.17g", #got, g_, w_);                          \
	} while (0)

#define assert_near(got, want, rel)                                                                \
	do {                                                                                       \
		double g_ = (got), w_ = (want), r_ = (rel);                                        \
		if (!(fabs(g_ - w_) <= r_ * fabs(w_)))                                             \
			fail_msg("%s = %.17g, want %.17g within %g%%", #got, g_, w_, r_ * 100);    \
	} while (0)

/* Deterministic pseudo-random numbers (xorshift64*), same run every time. */
static inline uint64_t dwt_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Parses a config the test wrote; a config error fails the test with the parser's message. */
static inline void dwt_parse(const char *text, struct dw_config *cfg)
{
	char err[256];

	if (dw_config_parse("t.conf", text, strlen(text), cfg, err, sizeof(err)))
		fail_msg("config: %s", err);
}

/*
 * Collector rows (logic/depset/dest.h) built by hand, as collect.c would leave
 * them: keys only through dw_dest_set_key, as there.
 */

/* n unused rows, in no dependency yet, each with a 4-slot call window (dwt_rows_free). */
static inline void dwt_rows_init(struct dw_dest *rows, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		rows[i].dep = rows[i].own_dep = -1;
		assert_int_equal(dw_window_init(&rows[i].call_win, 4), 0);
	}
}

static inline void dwt_rows_free(struct dw_dest *rows, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		dw_window_free(&rows[i].call_win);
}

/* d becomes the row of calls to ip4:port, ip4 "a.b.c.d". */
static inline struct dw_dest *dwt_outbound(struct dw_dest *d, const char *ip4, unsigned port)
{
	struct dw_dest_key key = { .family = AF_INET, .port = port };
	unsigned a, b, c, e;

	assert_int_equal(sscanf(ip4, "%u.%u.%u.%u", &a, &b, &c, &e), 4);
	key.addr[0] = a;
	key.addr[1] = b;
	key.addr[2] = c;
	key.addr[3] = e;
	d->used = true;
	dw_dest_set_key(d, &key);
	return d;
}

/* d becomes the inbound row of listening port port (requests this host answers). */
static inline struct dw_dest *dwt_inbound(struct dw_dest *d, unsigned port)
{
	struct dw_dest_key key = { .family = DW_FAMILY_INBOUND, .port = port };

	d->used = true;
	dw_dest_set_key(d, &key);
	return d;
}

#endif /* DW_TEST_H */
