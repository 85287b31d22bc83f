// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A dependency's figures (logic/depfigs.c): its destinations' counters, summed once for every output. */
#include "dwtest.h"

#include "logic/depfigs.h"

static void dest_of(struct dw_dest *d, uint64_t k, uint64_t oldest)
{
	memset(d, 0, sizeof(*d));
	d->sum = (struct dw_dest_stats){
		.calls_started = 11 * k + 1, .calls_completed = 10 * k, .calls_failed = k,
		.calls_slow = k, .call_ns_sum = 1000 * k, .connect_attempts = 3 * k,
		.connects_ok = 2 * k, .connect_refused = k, .connect_ns_sum = 100 * k,
		.connects_rejected = 5 * k, .conns_opened = 4 * k, .conns_closed = k,
		.calls_abandoned = k, .calls_retried = 2 * k, .conns_aborted_breaker = 7 * k,
		.conns_aborted_timeout = 8 * k, .calls_aborted = 9 * k,
	};
	d->cum_call[0] = k;
	d->cum_call[DW_HIST_COARSE - 1] = 2 * k;
	d->cum_connect[3] = 3 * k;
	d->oldest_call_ns = oldest;
}

static void test_destinations_summed(void **state)
{
	struct dw_dest a, b;
	struct dw_dep_figs f = { 0 };

	(void)state;
	dest_of(&a, 1, 0);
	dest_of(&b, 10, 500);
	dw_dep_figs_add_dest(&f, &a);
	dw_dep_figs_add_dest(&f, &b);
	assert_int_equal(f.calls, 110);
	assert_int_equal(f.failed, 11);
	assert_int_equal(f.slow, 11);
	assert_int_equal(f.started, 123);
	/* started - completed - failed - dropped: one outstanding on each */
	assert_int_equal(f.inflight, 1 + 1);
	assert_int_equal(f.rejected, 55);
	assert_int_equal(f.conns, 3 + 30);
	assert_int_equal(f.connects, 33);
	assert_int_equal(f.connect_failures, 11);
	assert_int_equal(f.abandoned, 11);
	assert_int_equal(f.retried, 22);
	assert_int_equal(f.aborted_breaker, 77);
	assert_int_equal(f.aborted_timeout, 88);
	assert_int_equal(f.calls_aborted, 99);
	assert_int_equal(f.call_ns_sum, 11000);
	assert_int_equal(f.connect_ns_sum, 1100);
	assert_int_equal(f.cum_call[0], 11);
	assert_int_equal(f.cum_call[DW_HIST_COARSE - 1], 22);
	assert_int_equal(f.cum_connect[3], 33);
	assert_int_equal(f.oldest_call_ns, 500);
}

/* ~other: the sums of the folded, and the oldest call the oldest of theirs. */
static void test_figures_summed(void **state)
{
	struct dw_dest a, b, c;
	struct dw_dep_figs x = { 0 }, y = { 0 }, other = { 0 };

	(void)state;
	dest_of(&a, 1, 900);
	dest_of(&b, 2, 300);
	dest_of(&c, 4, 0);
	dw_dep_figs_add_dest(&x, &a);
	dw_dep_figs_add_dest(&y, &b);
	dw_dep_figs_add_dest(&y, &c);
	dw_dep_figs_add(&other, &x);
	dw_dep_figs_add(&other, &y);
	assert_int_equal(other.calls, 70);
	assert_int_equal(other.inflight, 3);
	assert_int_equal(other.cum_call[DW_HIST_COARSE - 1], 14);
	assert_int_equal(other.calls_aborted, 63);
	assert_int_equal(other.oldest_call_ns, 300);
	/* a later figure with no call outstanding leaves the oldest as it is */
	dw_dep_figs_add(&other, &(struct dw_dep_figs){ .calls = 1 });
	assert_int_equal(other.oldest_call_ns, 300);
	assert_int_equal(other.calls, 71);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destinations_summed),
		cmocka_unit_test(test_figures_summed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
