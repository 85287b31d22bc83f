// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --max-series (logic/view/series.c): who keeps a series of their own, in every output alike. */
#include <stdbool.h>
#include <string.h>

#include "dwtest.h"

#include "logic/view/series.h"

#define NDEPS 6

/*
 * 0 and 3 configured and idle, 1, 2 and 4 destinations of their own at
 * 5, 30 and 0.2 calls/s, 5 unused, and one that no output shows (no
 * destination left).
 */
static void deps_of(struct dw_deps *deps, struct dw_dep *v)
{
	static const double rate[NDEPS] = { 0, 5, 30, -1, 0.2, 50 };

	memset(deps, 0, sizeof(*deps));
	memset(v, 0, NDEPS * sizeof(*v));
	for (unsigned i = 0; i < NDEPS; i++) {
		v[i].used = i != 5;
		v[i].id = i == 0 || i == 3 ? i + 1 : 0;
		v[i].ndests = 1;
		v[i].rates.call_rate = rate[i];
	}
	v[4].ndests = 0;
	v[4].rates.call_rate = 99;	/* not shown: never a series, folded or not */
	deps->deps = v;
	deps->n = NDEPS;
}

static void test_configured_then_busiest(void **state)
{
	struct dw_deps deps;
	struct dw_dep v[NDEPS];
	bool fold[NDEPS] = { false };

	(void)state;
	deps_of(&deps, v);
	/* 4 shown: 0, 1, 2, 3. Cap 3: ~other takes a line, the 2 configured the others */
	assert_int_equal(dw_series_fold_deps(&deps, 3, fold), 2);
	assert_false(fold[0]);
	assert_true(fold[1]);
	assert_true(fold[2]);
	assert_false(fold[3]);
	assert_false(fold[4]);
	assert_false(fold[5]);
	/* cap 4: all four fit, nothing folded */
	memset(fold, 0, sizeof(fold));
	assert_int_equal(dw_series_fold_deps(&deps, 4, fold), 0);
	/* no cap */
	assert_int_equal(dw_series_fold_deps(&deps, 0, fold), 0);
	for (unsigned i = 0; i < NDEPS; i++)
		assert_false(fold[i]);
}

/* One line left beside the configured: the busier keeps it, ~other the last. */
static void test_busiest_keeps_its_line(void **state)
{
	struct dw_deps deps;
	struct dw_dep v[NDEPS];
	bool fold[NDEPS] = { false };

	(void)state;
	deps_of(&deps, v);
	v[2].rates.call_rate = 4.9;	/* now 1 (5/s) is the busiest */
	v[3].id = 0;		/* and 3 a destination's own, at 1/s */
	v[3].rates.call_rate = 1;
	/* cap 3: 0 configured, 1 the busiest, ~other holds 2 and 3 */
	assert_int_equal(dw_series_fold_deps(&deps, 3, fold), 2);
	assert_false(fold[0]);
	assert_false(fold[1]);
	assert_true(fold[2]);
	assert_true(fold[3]);
}

static void test_dest_and_caller_items(void **state)
{
	struct dw_deps deps;
	struct dw_dep v[NDEPS];
	struct dw_dest d = { .dep = 0 };
	struct dw_caller_fig f = { .recent = 17 };
	struct dw_topn_item it;

	(void)state;
	deps_of(&deps, v);
	it = dw_series_dest_item(&deps, &d, 40, 7);
	assert_true(it.pinned);
	assert_int_equal(it.weight, 40);
	assert_int_equal(it.key, 7);
	d.dep = 1;
	assert_false(dw_series_dest_item(&deps, &d, 40, 7).pinned);
	d.dep = -1;	/* not assigned yet */
	assert_false(dw_series_dest_item(&deps, &d, 40, 7).pinned);
	it = dw_series_caller_item(&f, 3);
	assert_false(it.pinned);
	assert_int_equal(it.weight, 17);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_configured_then_busiest),
		cmocka_unit_test(test_busiest_keeps_its_line),
		cmocka_unit_test(test_dest_and_caller_items),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
