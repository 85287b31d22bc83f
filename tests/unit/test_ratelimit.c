// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The token bucket of alerts and abort lines (logic/base/ratelimit.c): 5 at once, then one per 12 s. */
#include "dwtest.h"

#include "logic/base/ratelimit.h"

#define SEC 1000000000ULL
#define T0 (1000 * SEC)

static void test_burst_then_one_per_refill(void **state)
{
	struct dw_ratelimit r;
	unsigned supp = 99;

	(void)state;
	dw_ratelimit_init(&r);
	for (int i = 0; i < 5; i++) {
		assert_true(dw_ratelimit_take(&r, T0, false, &supp));
		assert_int_equal(supp, 0);
	}
	assert_false(dw_ratelimit_take(&r, T0, false, &supp));
	assert_false(dw_ratelimit_take(&r, T0 + 11 * SEC, false, &supp));
	/* a token a refill: the next line says how many went unsaid */
	assert_true(dw_ratelimit_take(&r, T0 + DW_RATELIMIT_REFILL_NS, false, &supp));
	assert_int_equal(supp, 2);
	assert_false(dw_ratelimit_take(&r, T0 + DW_RATELIMIT_REFILL_NS + SEC, false, &supp));
}

static void test_must_goes_out_and_owes(void **state)
{
	struct dw_ratelimit r;
	unsigned supp;

	(void)state;
	dw_ratelimit_init(&r);
	for (int i = 0; i < 5; i++)
		assert_true(dw_ratelimit_take(&r, T0, false, &supp));
	assert_false(dw_ratelimit_take(&r, T0, false, &supp));
	assert_true(dw_ratelimit_take(&r, T0, true, &supp));
	assert_int_equal(supp, 1);
	/* it took a token it did not have: the next needs two refills */
	assert_false(dw_ratelimit_take(&r, T0 + DW_RATELIMIT_REFILL_NS, false, &supp));
	assert_true(dw_ratelimit_take(&r, T0 + 2 * DW_RATELIMIT_REFILL_NS, false, &supp));
	assert_int_equal(supp, 1);
}

/* A long quiet fills the bucket to its burst, no more. */
static void test_refill_caps_at_burst(void **state)
{
	struct dw_ratelimit r;
	unsigned supp;
	int n = 0;

	(void)state;
	dw_ratelimit_init(&r);
	assert_true(dw_ratelimit_take(&r, T0, false, &supp));
	while (dw_ratelimit_take(&r, T0 + 3600 * SEC, false, &supp))
		n++;
	assert_int_equal(n, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_then_one_per_refill),
		cmocka_unit_test(test_must_goes_out_and_owes),
		cmocka_unit_test(test_refill_caps_at_burst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
