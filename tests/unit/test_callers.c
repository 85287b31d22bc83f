// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dwtest.h"

#include "logic/callers/callers.h"

static struct dw_caller_fig fig(int dep, uint64_t cg, uint64_t calls, uint64_t inflight, uint64_t oldest)
{
	struct dw_caller_fig f;

	memset(&f, 0, sizeof(f));
	f.dep = dep;
	f.cgroup_id = cg;
	f.calls = calls;
	f.inflight = inflight;
	f.oldest_ns = oldest;
	f.recent = calls;
	f.window_calls = calls;
	f.hist[dw_caller_bucket(1000000)] = calls;	/* 1 ms each */
	return f;
}

/* Two destinations of one dependency, one caller on both: one row, summed; others ranked. */
static void test_merge_and_rank(void **state)
{
	struct dw_caller_fig v[6];
	size_t n;

	(void)state;
	v[0] = fig(1, 500, 10, 1, 3000);
	v[1] = fig(1, 400, 2, 0, 0);
	v[2] = fig(1, 500, 5, 2, 2000);	/* same caller, another destination */
	v[3] = fig(0, 400, 7, 0, 0);
	v[4] = fig(-1, 400, 99, 9, 1);	/* no dependency yet: dropped */
	v[5] = fig(1, 300, 3, 0, 0);
	n = dw_callers_merge(v, 6);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].dep, 0);
	assert_int_equal(v[0].cgroup_id, 400);
	/* dependency 1: most in flight first, then most calls */
	assert_int_equal(v[1].cgroup_id, 500);
	assert_int_equal(v[1].calls, 15);
	assert_int_equal(v[1].inflight, 3);
	assert_int_equal(v[1].oldest_ns, 2000);
	assert_int_equal(v[1].recent, 15);
	assert_int_equal(v[1].window_calls, 15);
	assert_int_equal(v[1].hist[dw_caller_bucket(1000000)], 15);
	assert_int_equal(v[2].cgroup_id, 300);
	assert_int_equal(v[3].cgroup_id, 400);
}

/* Equal figures: the lower id first, so the order does not flip between polls. */
static void test_ties(void **state)
{
	struct dw_caller_fig v[3];

	(void)state;
	v[0] = fig(2, 9, 1, 0, 0);
	v[1] = fig(2, 7, 1, 0, 0);
	v[2] = fig(2, 8, 1, 0, 0);
	assert_int_equal(dw_callers_merge(v, 3), 3);
	assert_int_equal(v[0].cgroup_id, 7);
	assert_int_equal(v[1].cgroup_id, 8);
	assert_int_equal(v[2].cgroup_id, 9);
}

/* Buckets: contiguous, at most 25% wide above 4 units, the kernel's function agrees. */
static void test_buckets(void **state)
{
	double lo, hi, prev_hi = 0;

	(void)state;
	for (unsigned b = 0; b < DW_CALLER_BUCKETS; b++) {
		dw_caller_bucket_bounds(b, &lo, &hi);
		assert_double_eq(lo, prev_hi);
		if (b >= DW_CALLER_SUB)
			assert_true(hi - lo <= 0.25 * lo + 1e-9);
		assert_int_equal(dw_caller_bucket((uint64_t)lo), b);
		if (b + 1 < DW_CALLER_BUCKETS)
			assert_int_equal(dw_caller_bucket((uint64_t)hi - 1), b);
		prev_hi = hi;
	}
	assert_int_equal(dw_caller_bucket(~0ULL), DW_CALLER_BUCKETS - 1);
}

/* Percentiles within 12.5% of the true value; -1 with no calls. */
static void test_percentiles(void **state)
{
	uint64_t hist[DW_CALLER_BUCKETS] = { 0 };
	uint64_t seed = 16;

	(void)state;
	assert_double_eq(dw_caller_percentile_ns(hist, 0.5), -1);
	/* 99 calls of 2 ms, one of 500 ms */
	hist[dw_caller_bucket(2000000)] += 99;
	hist[dw_caller_bucket(500000000)] += 1;
	assert_near(dw_caller_percentile_ns(hist, 0.50), 2e6, 0.125);
	assert_near(dw_caller_percentile_ns(hist, 0.99), 2e6, 0.125);
	assert_near(dw_caller_percentile_ns(hist, 1.0), 5e8, 0.125);
	for (int i = 0; i < 1000; i++) {
		uint64_t ns = 5000 + dwt_rand(&seed) % 10000000000ULL;
		uint64_t one[DW_CALLER_BUCKETS] = { 0 };

		one[dw_caller_bucket(ns)] = 1;
		assert_near(dw_caller_percentile_ns(one, 0.5), (double)ns, 0.125);
	}
}

/* One caller row as the collector keeps it: calls since start, the window, the last read. */
struct row {
	uint64_t calls;
	struct dw_window win;
	uint32_t seen[DW_CALLER_BUCKETS];
	uint32_t kernel[DW_CALLER_BUCKETS];	/* the kernel's cumulative histogram */
};

/* A poll as the collector does one: the window moves on, then the row is read. */
static void poll(struct row *r)
{
	dw_window_advance(&r->win);
	dw_caller_take(&r->calls, &r->win, r->seen, r->kernel);
}

/* The window's p in ns, and its calls in *n. */
static double window_pct(const struct row *r, double q, uint64_t *n)
{
	uint64_t hist[DW_CALLER_BUCKETS];

	*n = dw_caller_window(&r->win, hist);
	return dw_caller_percentile_ns(hist, q);
}

/*
 * An incident's history: 100 calls of 1 s, then fast ones (2 ms). Once the
 * window has moved past the slow ones, its p99 is the fast calls' while calls
 * since start still count every one.
 */
static void test_window_moves_past_slow(void **state)
{
	const unsigned nslots = 4;
	struct row r;
	uint64_t n;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(dw_window_init(&r.win, nslots), 0);
	r.kernel[dw_caller_bucket(1000000000)] = 100;
	poll(&r);
	assert_near(window_pct(&r, 0.99, &n), 1e9, 0.125);
	assert_int_equal(n, 100);
	/* the slow poll and nslots - 1 of fast calls: the slow ones still in the window */
	for (unsigned i = 1; i < nslots; i++) {
		r.kernel[dw_caller_bucket(2000000)] += 50;
		poll(&r);
	}
	assert_near(window_pct(&r, 0.99, &n), 1e9, 0.125);
	assert_int_equal(n, 100 + 50 * (nslots - 1));
	/* one more poll: the slow poll has left the window */
	r.kernel[dw_caller_bucket(2000000)] += 50;
	poll(&r);
	assert_near(window_pct(&r, 0.99, &n), 2e6, 0.125);
	assert_near(window_pct(&r, 0.50, &n), 2e6, 0.125);
	assert_int_equal(n, 50 * nslots);
	assert_int_equal(r.calls, 100 + 50 * nslots);
	/* no calls for a whole window: no percentiles (null), calls since start unchanged */
	for (unsigned i = 0; i < nslots; i++)
		poll(&r);
	assert_double_eq(window_pct(&r, 0.99, &n), -1);
	assert_int_equal(n, 0);
	assert_int_equal(r.calls, 100 + 50 * nslots);
	dw_window_free(&r.win);
}

/* The kernel's u32 buckets wrap: the delta is taken modulo 2^32, in both counts. */
static void test_take_wraps(void **state)
{
	struct row r;
	unsigned b = dw_caller_bucket(3000000);
	uint64_t n;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(dw_window_init(&r.win, 2), 0);
	r.seen[b] = r.kernel[b] = 0xfffffff0u;
	r.kernel[b] += 0x20;	/* wraps to 0x10 */
	poll(&r);
	assert_int_equal(r.calls, 0x20);
	assert_near(window_pct(&r, 0.99, &n), 3e6, 0.125);
	assert_int_equal(n, 0x20);
	assert_int_equal(r.seen[b], 0x10);
	/* a read with nothing new adds nothing */
	poll(&r);
	assert_int_equal(r.calls, 0x20);
	assert_int_equal(n, 0x20);
	dw_window_free(&r.win);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_and_rank),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_window_moves_past_slow),
		cmocka_unit_test(test_take_wraps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
