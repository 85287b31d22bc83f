// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>

#include "dwtest.h"

#include "logic/judge/eject.h"

#define SEC 1000000000ULL
#define T0 (5000 * SEC)

static const struct dw_eject_policy pol = {
    .slow_rate = 0.5, .failure_rate = 0.5, .eject_for_ns = 30 * SEC, .max_ejected = 0.5,
};

static struct dw_judgement jd(double slow_rate, double failure_rate)
{
	struct dw_judgement j = {
	    .decided = 20, .slow_rate = slow_rate, .failure_rate = failure_rate, .enough = true,
	};

	return j;
}

struct three {
	struct dw_eject e[3];
	struct dw_eject_dest d[3];
};

static void three_init(struct three *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 3; i++) {
		t->d[i].e = &t->e[i];
		t->d[i].j = jd(0, 0);
		t->d[i].had_calls = true;
	}
}

/* One slow replica of three: the dependency is at a third, under its 50%: ejected. */
static void test_one_slow_ejected(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.35, 0);

	(void)state;
	three_init(&t);
	t.d[1].j = jd(1, 0);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0), 1ULL << 1);
	assert_int_equal(t.e[1].state, DW_EJECT_OUT);
	assert_true(t.e[1].slow);
	assert_int_equal(t.e[1].until_ns, T0 + 30 * SEC);
	assert_int_equal(t.e[0].state, DW_EJECT_IN);
	assert_int_equal(t.e[2].state, DW_EJECT_IN);
}

/* A dependency slow everywhere is the breaker's, not ejection's. */
static void test_dep_slow_is_breakers(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.7, 0);

	(void)state;
	three_init(&t);
	t.d[0].j = jd(1, 0);
	t.d[1].j = jd(1, 0);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0), 0);
	assert_int_equal(t.e[0].state, DW_EJECT_IN);
}

/* Fewer than two destinations with calls: nothing is ever ejected. */
static void test_needs_two_with_calls(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.3, 0);

	(void)state;
	three_init(&t);
	t.d[0].j = jd(1, 0);
	t.d[1].had_calls = t.d[2].had_calls = false;
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0), 0);
	assert_int_equal(dw_eject_limit(&pol, 1), 0);
	assert_int_equal(dw_eject_limit(&pol, 2), 1);
	assert_int_equal(dw_eject_limit(&pol, 3), 1);
	assert_int_equal(dw_eject_limit(&pol, 4), 2);
}

/* max_ejected: two outliers of three, one ejected; never the last healthy one at 100%. */
static void test_max_ejected(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.4, 0);
	struct dw_eject_policy all = pol;

	(void)state;
	three_init(&t);
	t.d[0].j = jd(0.6, 0);
	t.d[2].j = jd(0, 0.6);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0), 1ULL << 0);
	assert_int_equal(t.e[2].state, DW_EJECT_IN);
	all.max_ejected = 1;
	assert_int_equal(dw_eject_limit(&all, 3), 2);
}

/* Out for eject_for, then probing; good probes return it, a bad one ejects it for longer. */
static void test_probe_and_growth(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.3, 0);

	(void)state;
	three_init(&t);
	t.d[1].j = jd(1, 0);
	dw_eject_step(&pol, &dep, t.d, 3, T0);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0 + 29 * SEC), 0);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0 + 30 * SEC), 1ULL << 1);
	assert_int_equal(t.e[1].state, DW_EJECT_PROBING);
	t.d[1].probes = (struct dw_probe_result){ .decided = 1, .bad = 1, .done = true };
	dw_eject_step(&pol, &dep, t.d, 3, T0 + 31 * SEC);
	assert_int_equal(t.e[1].state, DW_EJECT_OUT);
	assert_int_equal(t.e[1].ejections, 2);
	assert_int_equal(t.e[1].until_ns, T0 + 31 * SEC + 60 * SEC);
	dw_eject_step(&pol, &dep, t.d, 3, T0 + 91 * SEC);
	assert_int_equal(t.e[1].state, DW_EJECT_PROBING);
	t.d[1].probes = (struct dw_probe_result){ .decided = 5, .bad = 0, .done = true };
	t.d[1].j = jd(0, 0);
	dw_eject_step(&pol, &dep, t.d, 3, T0 + 92 * SEC);
	assert_int_equal(t.e[1].state, DW_EJECT_IN);
	assert_int_equal(dw_eject_duration(&pol, 9), 8 * 30 * SEC);
}

/*
 * Back through its probes: its judgement of that step still holds the
 * calls that got it ejected (failed by the abort): not ejected again then.
 */
static void test_back_not_judged_on_old_calls(void **state)
{
	struct three t;
	struct dw_judgement dep = jd(0.3, 0);

	(void)state;
	three_init(&t);
	t.d[1].j = jd(1, 0);
	dw_eject_step(&pol, &dep, t.d, 3, T0);
	dw_eject_step(&pol, &dep, t.d, 3, T0 + 30 * SEC);
	assert_int_equal(t.e[1].state, DW_EJECT_PROBING);
	t.d[1].probes = (struct dw_probe_result){ .decided = 5, .bad = 0, .done = true };
	t.d[1].j = jd(0, 0.8);
	assert_int_equal(dw_eject_step(&pol, &dep, t.d, 3, T0 + 31 * SEC), 1ULL << 1);
	assert_int_equal(t.e[1].state, DW_EJECT_IN);
	assert_int_equal(t.e[1].ejections, 1);
}

/* Not enough calls of its own decides nothing; a stall is slow. */
static void test_enough_and_stall(void **state)
{
	struct dw_judgement j = jd(1, 0);
	bool slow = false;

	(void)state;
	j.enough = false;
	assert_false(dw_eject_outlier(&pol, &j, &slow));
	j = jd(0, 0);
	j.stalled = true;
	assert_true(dw_eject_outlier(&pol, &j, &slow));
	assert_true(slow);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_slow_ejected),
	    cmocka_unit_test(test_dep_slow_is_breakers),
	    cmocka_unit_test(test_needs_two_with_calls),
	    cmocka_unit_test(test_max_ejected),
	    cmocka_unit_test(test_probe_and_growth),
	    cmocka_unit_test(test_back_not_judged_on_old_calls),
	    cmocka_unit_test(test_enough_and_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
