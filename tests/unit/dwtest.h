/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared by the unit tests: cmocka in the include order Debian's 1.1 needs. */
#ifndef DW_TEST_H
#define DW_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

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

#endif /* DW_TEST_H */
