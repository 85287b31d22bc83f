// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "dwtest.h"

#include "logic/base/hist.h"

#define US 1000ULL
#define MS (1000ULL * US)
#define SEC (1000ULL * MS)

/*
 * Reference lower bound: the smallest ns that dw_hist_bucket() (the
 * kernel's own function) puts in bucket b or above, by binary search.
 */
static uint64_t ref_lower(unsigned b)
{
	uint64_t lo = 0, hi = UINT64_MAX, mid;

	if (dw_hist_bucket(UINT64_MAX) < b)
		return UINT64_MAX;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (dw_hist_bucket(mid) >= b)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Values from 1 us to 60 s: a geometric sweep with jitter, and bucket edges. */
static size_t sample_values(uint64_t *out, size_t max)
{
	uint64_t seed = 42, ns;
	size_t n = 0;
	double x;
	unsigned b;

	for (x = 1000.0; x <= 60.0 * SEC && n < max; x *= 1.0007)
		out[n++] = (uint64_t)x + dwt_rand(&seed) % 7;
	for (b = 1; b < DW_HIST_BUCKETS && n + 2 < max; b++) {
		ns = ref_lower(b);
		if (ns < 1000 || ns > 60 * SEC)
			continue;
		out[n++] = ns - 1;
		out[n++] = ns;
	}
	if (n < max)
		out[n++] = 60 * SEC;
	return n;
}

#define NSAMPLES 40000
static uint64_t samples[NSAMPLES];
static size_t nsamples;

static int setup(void **state)
{
	(void)state;
	nsamples = sample_values(samples, NSAMPLES);
	return nsamples > 1000 ? 0 : -1;
}

static void test_bucket_count(void **state)
{
	(void)state;
	/* 16 single-unit buckets, then 16 per power of two from 2^4 to 2^30 */
	assert_int_equal(DW_HIST_BUCKETS, 16 + 27 * 16);
	assert_int_equal(dw_hist_bucket(UINT64_MAX), DW_HIST_BUCKETS - 1);
}

static void test_bounds_match_kernel_bucketing(void **state)
{
	unsigned b;

	(void)state;
	for (b = 0; b < DW_HIST_BUCKETS; b++)
		assert_int_equal(dw_hist_lower_ns(b), ref_lower(b));
	for (b = 0; b + 1 < DW_HIST_BUCKETS; b++)
		assert_int_equal(dw_hist_upper_ns(b), ref_lower(b + 1));
}

static void test_known_bounds(void **state)
{
	(void)state;
	/* worked out by hand from the header's definition */
	assert_int_equal(dw_hist_lower_ns(0), 0);
	assert_int_equal(dw_hist_upper_ns(0), 64);
	assert_int_equal(dw_hist_bucket(1000), 15);
	assert_int_equal(dw_hist_lower_ns(15), 960);
	assert_int_equal(dw_hist_upper_ns(15), 1024);
	assert_int_equal(dw_hist_lower_ns(16), 1024);
	/* 1 ms = 15625 units: 2^13 range, sub-bucket 30 - 16 = 14 */
	assert_int_equal(dw_hist_bucket(MS), 16 + 9 * 16 + 14);
	assert_int_equal(dw_hist_lower_ns(174), 30ULL << 9 << 6);
	assert_int_equal(dw_hist_upper_ns(174), 31ULL << 9 << 6);
	/* the last bucket is the top sub-bucket of 2^30 units, ~133 s */
	assert_int_equal(dw_hist_lower_ns(DW_HIST_BUCKETS - 1), 31ULL << 26 << 6);
	assert_int_equal(dw_hist_upper_ns(DW_HIST_BUCKETS - 1), UINT64_MAX);
	assert_int_equal(dw_hist_lower_ns(DW_HIST_BUCKETS), UINT64_MAX);
}

static void test_value_in_its_bucket(void **state)
{
	uint64_t ns;
	unsigned b;
	size_t i;

	(void)state;
	for (i = 0; i < nsamples; i++) {
		ns = samples[i];
		b = dw_hist_bucket(ns);
		if (dw_hist_lower_ns(b) > ns || ns >= dw_hist_upper_ns(b))
			fail_msg("%llu ns in bucket %u [%llu, %llu)", (unsigned long long)ns, b,
				 (unsigned long long)dw_hist_lower_ns(b),
				 (unsigned long long)dw_hist_upper_ns(b));
	}
}

static void test_bucket_width(void **state)
{
	uint64_t lo, hi;
	unsigned b;

	(void)state;
	for (b = 0; b + 1 < DW_HIST_BUCKETS; b++) {
		lo = dw_hist_lower_ns(b);
		hi = dw_hist_upper_ns(b);
		assert_true(hi > lo);
		if (lo >= 1024 && (hi - lo) * 16 > lo)
			fail_msg("bucket %u [%llu, %llu) wider than 1/16", b,
				 (unsigned long long)lo, (unsigned long long)hi);
	}
}

static void test_representative_error(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < nsamples; i++)
		assert_near(dw_hist_value_ns(dw_hist_bucket(samples[i])), (double)samples[i], 0.04);
}

static void test_representative_is_midpoint(void **state)
{
	unsigned b;

	(void)state;
	for (b = 0; b + 1 < DW_HIST_BUCKETS; b++)
		assert_double_eq(dw_hist_value_ns(b), (ref_lower(b) + ref_lower(b + 1)) / 2.0);
	assert_double_eq(dw_hist_value_ns(DW_HIST_BUCKETS - 1),
			 (double)ref_lower(DW_HIST_BUCKETS - 1));
}

static void test_contiguous(void **state)
{
	unsigned b;

	(void)state;
	assert_int_equal(dw_hist_lower_ns(0), 0);
	for (b = 0; b + 1 < DW_HIST_BUCKETS; b++) {
		assert_int_equal(dw_hist_upper_ns(b), dw_hist_lower_ns(b + 1));
		assert_int_equal(dw_hist_bucket(dw_hist_lower_ns(b)), b);
		assert_int_equal(dw_hist_bucket(dw_hist_upper_ns(b) - 1), b);
	}
}

/*
 * Each fine bucket counts in the smallest coarse bucket whose bound holds
 * its whole range; a coarse count never holds a call above its bound, and
 * the only fine buckets that straddle a bound are at most 6.25% wide.
 */
static void test_coarse_buckets(void **state)
{
	unsigned b, c, prev = 0;

	(void)state;
	assert_int_equal(dw_hist_coarse_ns(DW_HIST_COARSE - 1), UINT64_MAX);
	assert_string_equal(dw_hist_coarse_le(DW_HIST_COARSE - 1), "+Inf");
	assert_string_equal(dw_hist_coarse_le(0), "0.001");
	for (c = 1; c < DW_HIST_COARSE; c++)
		assert_true(dw_hist_coarse_ns(c) > dw_hist_coarse_ns(c - 1));
	for (b = 0; b < DW_HIST_BUCKETS; b++) {
		c = dw_hist_coarse_of(b);
		assert_true(c < DW_HIST_COARSE);
		assert_true(c >= prev);
		prev = c;
		assert_true(dw_hist_upper_ns(b) <= dw_hist_coarse_ns(c));
		if (c > 0 && dw_hist_lower_ns(b) < dw_hist_coarse_ns(c - 1))
			assert_true((dw_hist_upper_ns(b) - dw_hist_lower_ns(b)) * 16 <= dw_hist_lower_ns(b));
	}
	assert_int_equal(dw_hist_coarse_of(dw_hist_bucket(900000)), 0);
	assert_int_equal(dw_hist_coarse_of(dw_hist_bucket(9000000000ULL)), 12);
	assert_int_equal(dw_hist_coarse_of(DW_HIST_BUCKETS - 1), DW_HIST_COARSE - 1);
}

static void test_monotonic(void **state)
{
	uint64_t seed = 7, a, c;
	int i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		a = dwt_rand(&seed) >> (dwt_rand(&seed) % 64);
		c = a + (dwt_rand(&seed) >> (dwt_rand(&seed) % 64));
		if (c < a)
			continue;
		assert_true(dw_hist_bucket(a) <= dw_hist_bucket(c));
	}
}

static void add_ns(uint64_t *counts, uint64_t ns, uint64_t n)
{
	counts[dw_hist_bucket(ns)] += n;
}

static void test_percentile_empty(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	assert_int_equal(dw_hist_total(counts), 0);
	assert_double_eq(dw_hist_percentile_ns(counts, 0.5), -1.0);
	assert_double_eq(dw_hist_percentile_ns(counts, 1.0), -1.0);
}

static void test_percentile_bad_q(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	add_ns(counts, MS, 10);
	assert_double_eq(dw_hist_percentile_ns(counts, 0.0), -1.0);
	assert_double_eq(dw_hist_percentile_ns(counts, -0.5), -1.0);
	assert_double_eq(dw_hist_percentile_ns(counts, 1.5), -1.0);
	assert_double_eq(dw_hist_percentile_ns(counts, NAN), -1.0);
}

static void test_percentile_single(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	add_ns(counts, 5 * MS, 1);
	assert_int_equal(dw_hist_total(counts), 1);
	assert_near(dw_hist_percentile_ns(counts, 0.001), 5.0 * MS, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 0.5), 5.0 * MS, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 1.0), 5.0 * MS, 0.04);
}

static void test_percentile_bimodal(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	add_ns(counts, 10 * MS, 90);
	add_ns(counts, SEC, 10);
	assert_int_equal(dw_hist_total(counts), 100);
	assert_near(dw_hist_percentile_ns(counts, 0.01), 10.0 * MS, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 0.5), 10.0 * MS, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 0.9), 10.0 * MS, 0.04);   /* rank 90 */
	assert_near(dw_hist_percentile_ns(counts, 0.901), 1.0 * SEC, 0.04); /* rank 91 */
	assert_near(dw_hist_percentile_ns(counts, 0.99), 1.0 * SEC, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 1.0), 1.0 * SEC, 0.04);
}

/* 0.07 * 100 is 7.000000000000001 in doubles: still rank 7, not 8. */
static void test_percentile_rank_rounding(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	add_ns(counts, MS, 7);
	add_ns(counts, SEC, 93);
	assert_near(dw_hist_percentile_ns(counts, 0.07), 1.0 * MS, 0.04);
	assert_near(dw_hist_percentile_ns(counts, 0.0701), 1.0 * SEC, 0.04);
}

/* 1, 2, ..., 1000 ms once each: the nearest-rank q-quantile is ceil(1000 q) ms. */
static void test_percentile_uniform(void **state)
{
	static const double qs[] = {0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0};
	static const double want_ms[] = {1, 100, 250, 500, 750, 900, 950, 990, 999, 1000};
	uint64_t counts[DW_HIST_BUCKETS] = {0};
	unsigned i;

	(void)state;
	for (i = 1; i <= 1000; i++)
		add_ns(counts, i * MS, 1);
	assert_int_equal(dw_hist_total(counts), 1000);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++)
		assert_near(dw_hist_percentile_ns(counts, qs[i]), want_ms[i] * MS, 0.04);
}

static void test_percentile_last_bucket(void **state)
{
	uint64_t counts[DW_HIST_BUCKETS] = {0};

	(void)state;
	add_ns(counts, 1000 * SEC, 3);
	assert_double_eq(dw_hist_percentile_ns(counts, 0.5), (double)(31ULL << 26 << 6));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bucket_count),
	    cmocka_unit_test(test_bounds_match_kernel_bucketing),
	    cmocka_unit_test(test_known_bounds),
	    cmocka_unit_test(test_value_in_its_bucket),
	    cmocka_unit_test(test_bucket_width),
	    cmocka_unit_test(test_representative_error),
	    cmocka_unit_test(test_representative_is_midpoint),
	    cmocka_unit_test(test_contiguous),
	    cmocka_unit_test(test_monotonic),
	    cmocka_unit_test(test_percentile_empty),
	    cmocka_unit_test(test_percentile_bad_q),
	    cmocka_unit_test(test_percentile_single),
	    cmocka_unit_test(test_percentile_bimodal),
	    cmocka_unit_test(test_percentile_rank_rounding),
	    cmocka_unit_test(test_percentile_uniform),
	    cmocka_unit_test(test_percentile_last_bucket),
	    cmocka_unit_test(test_coarse_buckets),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
