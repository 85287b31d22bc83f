// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Inverse of dw_hist_bucket() in depwatch.h. Deliberately free of libm:
 * the daemon links the logic files without -lm.
 */
#include <stdint.h>

#include "logic/base/hist.h"

/* Lower bound in histogram units (64 ns); b < DW_HIST_BUCKETS. */
static uint64_t lower_units(unsigned b)
{
	unsigned k, sub;

	if (b < DW_HIST_SUB)
		return b;
	k = DW_HIST_SUB_BITS + (b - DW_HIST_SUB) / DW_HIST_SUB;
	sub = (b - DW_HIST_SUB) % DW_HIST_SUB;
	return (uint64_t)(DW_HIST_SUB + sub) << (k - DW_HIST_SUB_BITS);
}

uint64_t dw_hist_lower_ns(unsigned b)
{
	if (b >= DW_HIST_BUCKETS)
		return UINT64_MAX;
	return lower_units(b) << DW_HIST_UNIT_SHIFT;
}

uint64_t dw_hist_upper_ns(unsigned b)
{
	if (b >= DW_HIST_BUCKETS - 1)
		return UINT64_MAX;
	return dw_hist_lower_ns(b + 1);
}

double dw_hist_value_ns(unsigned b)
{
	uint64_t lo = dw_hist_lower_ns(b);

	if (b >= DW_HIST_BUCKETS - 1)
		return (double)lo;
	return (double)lo + (double)(dw_hist_upper_ns(b) - lo) / 2.0;
}

uint64_t dw_hist_total(const uint64_t *counts)
{
	uint64_t total = 0;
	unsigned b;

	for (b = 0; b < DW_HIST_BUCKETS; b++)
		total += counts[b];
	return total;
}

/*
 * ceil(q * total), clamped to 1..total. q * total is rounded: 0.07 * 100
 * comes out as 7.000000000000001, and a plain ceil() would pick rank 8.
 * A product within a relative 1e-9 of an integer is taken to be that
 * integer.
 */
static uint64_t nearest_rank(double q, uint64_t total)
{
	double r = q * (double)total, diff;
	uint64_t near, rank;

	/* also keeps the conversions below in range when total is near 2^64 */
	if (r >= (double)total)
		return total;
	near = (uint64_t)(r + 0.5);
	diff = r > (double)near ? r - (double)near : (double)near - r;
	rank = diff <= r * 1e-9 ? near : (uint64_t)r + 1;
	return rank < 1 ? 1 : rank;
}

double dw_hist_percentile_ns(const uint64_t *counts, double q)
{
	uint64_t total = dw_hist_total(counts), rank, seen = 0;
	unsigned b;

	/* written so that NaN fails too */
	if (total == 0 || !(q > 0.0 && q <= 1.0))
		return -1.0;
	rank = nearest_rank(q, total);
	for (b = 0; b < DW_HIST_BUCKETS; b++) {
		seen += counts[b];
		if (seen >= rank)
			return dw_hist_value_ns(b);
	}
	return dw_hist_value_ns(DW_HIST_BUCKETS - 1); /* not reached */
}

static const struct {
	uint64_t ns;
	const char *le;
} coarse[DW_HIST_COARSE] = {
	{ 1000000ULL, "0.001" },	{ 2500000ULL, "0.0025" },	{ 5000000ULL, "0.005" },
	{ 10000000ULL, "0.01" },	{ 25000000ULL, "0.025" },	{ 50000000ULL, "0.05" },
	{ 100000000ULL, "0.1" },	{ 250000000ULL, "0.25" },	{ 500000000ULL, "0.5" },
	{ 1000000000ULL, "1" },		{ 2500000000ULL, "2.5" },	{ 5000000000ULL, "5" },
	{ 10000000000ULL, "10" },	{ 30000000000ULL, "30" },	{ 60000000000ULL, "60" },
	{ UINT64_MAX, "+Inf" },
};

uint64_t dw_hist_coarse_ns(unsigned i)
{
	return i < DW_HIST_COARSE ? coarse[i].ns : UINT64_MAX;
}

const char *dw_hist_coarse_le(unsigned i)
{
	return i < DW_HIST_COARSE ? coarse[i].le : "+Inf";
}

unsigned dw_hist_coarse_of(unsigned b)
{
	uint64_t upper = dw_hist_upper_ns(b);
	unsigned i = 0;

	while (i < DW_HIST_COARSE - 1 && upper > coarse[i].ns)
		i++;
	return i;
}
