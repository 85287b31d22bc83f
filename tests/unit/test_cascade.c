// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>

#include "dwtest.h"

#include "logic/judge/cascade.h"

static struct dw_pool_input pool_of(unsigned pool, double inflight, double rate, double rising,
				    double latency_s)
{
	struct dw_pool_input in = {
		.pool = pool,
		.inflight = inflight,
		.arrival_rate = rate,
		.rising = rising,
		.latency_s = latency_s,
	};

	return in;
}

/* 20 req/s at 220 ms in a pool of 40: 4.4 in flight, nothing to say. */
static void test_healthy_pool(void **state)
{
	struct dw_pool_input in = pool_of(40, 4, 20, 3, 0.22);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_near(fc.steady, 4.4, 1e-9);
	assert_int_equal(fc.level, DW_POOL_OK);
	assert_double_eq(fc.exhausted_in_s, -1);
	assert_string_equal(fc.why, "");
}

/*
 * The dependency hangs (no timeout): nothing completes, in-flight grows at
 * the arrival rate, 40 - 10 = 30 places left at 20/s: 1.5 s. The issue's
 * example: pool=200 inflight=143 rising=40/s -> about 1.4 s.
 */
static void test_hang_forecast(void **state)
{
	struct dw_pool_input in = pool_of(40, 10, 20, 0, INFINITY);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_true(isinf(fc.steady));
	assert_near(fc.rising, 20, 1e-9);
	assert_near(fc.exhausted_in_s, 1.5, 1e-9);
	assert_int_equal(fc.level, DW_POOL_WARNING);
	assert_string_equal(fc.why, "forecast");

	in = pool_of(200, 143, 40, 40, INFINITY);
	dw_pool_forecast(&in, &fc);
	assert_near(fc.exhausted_in_s, 57.0 / 40, 1e-9);
}

/* A measured growth faster than Little's wins: the forecast errs early, never late. */
static void test_measured_growth_wins(void **state)
{
	struct dw_pool_input in = pool_of(100, 50, 20, 30, 10);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_near(fc.steady, 200, 1e-9);
	assert_near(fc.rising, 30, 1e-9);
	assert_near(fc.exhausted_in_s, 50.0 / 30, 1e-9);
}

/* With a timeout the level settles at rate x timeout: under the pool, no forecast. */
static void test_timeout_bounds_steady(void **state)
{
	struct dw_pool_input in = pool_of(100, 10, 20, 5, dw_dep_wait_s(0.2, true, 2.0));
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_near(fc.steady, 40, 1e-9);
	assert_double_eq(fc.exhausted_in_s, -1);
	assert_int_equal(fc.level, DW_POOL_OK);
}

static void test_levels(void **state)
{
	struct dw_pool_input in = pool_of(100, 80, 1, 0, 0.01);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_WARNING);
	assert_string_equal(fc.why, "pool_80pct");
	in.inflight = 100;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_EXHAUSTED);
	assert_string_equal(fc.why, "exhausted");
	assert_double_eq(fc.exhausted_in_s, -1);
	/* hysteresis: 77 after a warning stays a warning, 74 clears; 77 from ok is ok */
	in.inflight = 77;
	in.was = DW_POOL_WARNING;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_WARNING);
	in.inflight = 74;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_OK);
	in.inflight = 77;
	in.was = DW_POOL_OK;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_OK);
}

/* No pool configured: figures, never a level. */
static void test_no_pool(void **state)
{
	struct dw_pool_input in = pool_of(0, 1000, 20, 20, INFINITY);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_int_equal(fc.level, DW_POOL_OK);
	assert_double_eq(fc.exhausted_in_s, -1);
	assert_string_equal(dw_pool_level_name(fc.level), "ok");
}

/* No traffic and no latency: nothing, and no NaN from 0 x infinity. */
static void test_idle(void **state)
{
	struct dw_pool_input in = pool_of(10, 0, 0, 0, INFINITY);
	struct dw_pool_forecast fc;

	(void)state;
	dw_pool_forecast(&in, &fc);
	assert_double_eq(fc.steady, 0);
	assert_int_equal(fc.level, DW_POOL_OK);
	in.latency_s = 0;
	dw_pool_forecast(&in, &fc);
	assert_double_eq(fc.steady, 0);
	assert_int_equal(fc.level, DW_POOL_OK);
}

static void test_dep_wait(void **state)
{
	(void)state;
	assert_double_eq(dw_dep_wait_s(0.2, false, 0.8), 0.2);
	assert_double_eq(dw_dep_wait_s(-1, false, 0.8), 0);
	assert_double_eq(dw_dep_wait_s(0.2, true, 0.8), 0.8);
	assert_true(isinf(dw_dep_wait_s(0.2, true, 0)));
}

static void test_ewma(void **state)
{
	double v = -1;

	(void)state;
	v = dw_ewma(v, 10, 0.25, 1);
	assert_double_eq(v, 10);
	/* a step from 10 to 20 reaches 1 - 1/e of the way after tau */
	for (int i = 0; i < 4; i++)
		v = dw_ewma(v, 20, 0.25, 1);
	assert_near(v, 20 - 10 * exp(-1), 1e-9);
	assert_double_eq(dw_ewma(5, 7, 0, 1), 5);
}

/* A client making 3 attempts per call (2 retries): ratio 3. */
static void test_retry_ratio(void **state)
{
	(void)state;
	assert_double_eq(dw_retry_ratio(0, 0), 0);
	assert_double_eq(dw_retry_ratio(100, 0), 1);
	assert_near(dw_retry_ratio(300, 200), 3, 1e-9);
	assert_near(dw_retry_ratio(3, 3), 3, 1e-9);	/* originals before the period */
	assert_true(dw_retry_storm(3, true));
	assert_false(dw_retry_storm(3, false));
	assert_false(dw_retry_storm(1.2, true));
}

/*
 * 30 calls/s with 20 retries/s, polled every 250 ms for 20 s, kept once a
 * second: the oldest sample inside 10 s is 9.75 s old (39 polls).
 */
static void test_count_ring(void **state)
{
	struct dw_count_ring r = { 0 };
	uint64_t da, db, now = 0, a = 0, b = 0;

	(void)state;
	assert_false(dw_count_ring_delta(&r, 0, 0, 0, 10 * 1000000000ULL, &da, &db));
	for (int i = 0; i < 80; i++) {
		now += 250000000ULL;
		a += 7 + (i % 2);	/* 7 and 8: 30 per second */
		b += 5;
		dw_count_ring_push(&r, now, a, b, 1000000000ULL);
	}
	assert_int_equal(r.n, DW_COUNT_RING);
	assert_true(dw_count_ring_delta(&r, now, a, b, 10 * 1000000000ULL, &da, &db));
	assert_int_equal(db, 39 * 5);
	assert_true(da == 292 || da == 293);
	assert_near(dw_retry_ratio(da, db), 3, 0.01);
	/* counters that went back (a new map): no figure */
	assert_false(dw_count_ring_delta(&r, now, 1, 1, 10 * 1000000000ULL, &da, &db));
	/* a span shorter than the gap to any sample */
	assert_false(dw_count_ring_delta(&r, now + 2000000000ULL, a, b, 500000000ULL, &da, &db));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_pool),
		cmocka_unit_test(test_hang_forecast),
		cmocka_unit_test(test_measured_growth_wins),
		cmocka_unit_test(test_timeout_bounds_steady),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_no_pool),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_dep_wait),
		cmocka_unit_test(test_ewma),
		cmocka_unit_test(test_retry_ratio),
		cmocka_unit_test(test_count_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
