// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A dependency's figures (logic/depset/depfigs.c): its destinations' counters, summed once for every output. */
#include "dwtest.h"

#include "logic/depset/depfigs.h"

static void dest_of(struct dw_dest *d, uint64_t k, uint64_t oldest)
{
	memset(d, 0, sizeof(*d));
	d->sum = (struct dw_dest_stats){
		.calls_started = 11 * k + 1, .calls_completed = 10 * k, .calls_failed = k,
		.calls_slow = k, .call_ns_sum = 1000 * k, .connect_attempts = 3 * k,
		.connects_ok = 2 * k, .connect_refused = k, .connect_ns_sum = 100 * k,
		.connects_rejected = 5 * k, .conns_opened = 4 * k, .conns_closed = k,
		.calls_abandoned = k, .calls_retried = 2 * k, .conns_aborted_breaker = 7 * k,
		.conns_aborted_timeout = 8 * k, .calls_aborted = 9 * k, .calls_failed_closed = k,
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
	assert_int_equal(f.failed_closed, 11);
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
	assert_int_equal(other.failed_closed, 7);
	assert_int_equal(other.oldest_call_ns, 300);
	/* a later figure with no call outstanding leaves the oldest as it is */
	dw_dep_figs_add(&other, &(struct dw_dep_figs){ .calls = 1 });
	assert_int_equal(other.oldest_call_ns, 300);
	assert_int_equal(other.calls, 71);
}

/*
 * The late-outcome correction (issue 47): the calls whose HTTP/2 answer failed them after the
 * kernel counted them completed move to failed, fast or slow as the kernel had them. One
 * function for every reader: status's table, its JSON, a ~other fold, the dependencies' sums.
 */
static void test_outcomes_moved_once_for_every_reader(void **state)
{
	struct dw_dest a, b;
	struct dw_late late = { .moved_status = 3, .moved_grpc = 4, .moved_slow = 2, .answers = { 5, 0, 0, 3 } };
	struct dw_dest_outcomes o;
	struct dw_dep_figs f = { 0 };

	(void)state;
	dest_of(&a, 10, 0);	/* completed 100, failed 10, slow 10 */
	o = dw_dest_outcomes(&a);
	assert_int_equal(o.calls, 100);
	assert_int_equal(o.failed, 10);
	assert_int_equal(o.slow, 10);
	a.late = &late;
	o = dw_dest_outcomes(&a);
	assert_int_equal(o.calls, 100 - 7);
	assert_int_equal(o.failed, 10 + 7);
	assert_int_equal(o.slow, 10 - 2);
	/* ended calls stay ended: moved, not added */
	assert_int_equal(o.calls + o.failed, a.sum.calls_completed + a.sum.calls_failed);

	/* never below 0, whatever was read when */
	dest_of(&b, 1, 0);	/* completed 10, failed 1, slow 1 */
	b.late = &(struct dw_late){ .moved_status = 12, .moved_slow = 5 };
	o = dw_dest_outcomes(&b);
	assert_int_equal(o.calls, 0);
	assert_int_equal(o.failed, 1 + 12);
	assert_int_equal(o.slow, 0);

	/* a dependency's sums are its destinations' rows as status shows them */
	dw_dep_figs_add_dest(&f, &a);
	dw_dep_figs_add_dest(&f, &b);
	assert_int_equal(f.calls, 93 + 0);
	assert_int_equal(f.failed, 17 + 13);
	assert_int_equal(f.slow, 8 + 0);
	assert_int_equal(f.failed_status, 3 + 12);
	assert_int_equal(f.failed_grpc, 4);
	/* the failures a close named are the kernel's: a late answer moves completed calls only */
	assert_int_equal(f.failed_closed, 10 + 1);
	assert_int_equal(f.answers[DW_ANS_2xx], 5);
	assert_int_equal(f.answers[DW_ANS_5xx], 3);
}

/* Every uniform figure (DW_DEST_FIGS) is the sum of its own counter, and in the JSON under its key. */
static void test_uniform_figures_from_one_list(void **state)
{
	struct dw_dest a, b;
	struct dw_dep_figs f = { 0 };
	char want[1024];
	struct dw_buf out = { 0 };
	uint64_t k = 0;
	size_t n = 0;

	(void)state;
	dest_of(&a, 1, 0);
	dest_of(&b, 1, 0);
#define SET_STAT(field, stat, json, metric, when, help) a.sum.stat = ++k, b.sum.stat = 100 * k;
	DW_DEST_FIGS(SET_STAT)
#undef SET_STAT
	dw_dep_figs_add_dest(&f, &a);
	dw_dep_figs_add_dest(&f, &b);
	k = 0;
#define CHECK_FIG(field, stat, json, metric, when, help)                                           \
	k++;                                                                                        \
	assert_int_equal(f.field, 101 * k);                                                         \
	n += snprintf(want + n, sizeof(want) - n, ",\"%s\":%llu", json, (unsigned long long)(101 * k)); \
	assert_int_equal(strncmp(metric, "depwatch_", 9), 0);                                       \
	assert_int_equal(strcmp(metric + strlen(metric) - 6, "_total"), 0);                         \
	assert_true(strlen(help) > 10);
	DW_DEST_FIGS(CHECK_FIG)
#undef CHECK_FIG
	assert_int_equal(k, 11);
	dw_dep_figs_json(&out, &f);
	assert_false(out.oom);
	assert_int_equal(out.len, strlen(want));
	assert_memory_equal(out.data, want, out.len);
	assert_non_null(strstr(want, ",\"rejected\":101,\"streams\":202,"));
	dw_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destinations_summed),
		cmocka_unit_test(test_figures_summed),
		cmocka_unit_test(test_outcomes_moved_once_for_every_reader),
		cmocka_unit_test(test_uniform_figures_from_one_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
