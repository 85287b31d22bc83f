// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "dwtest.h"

#include "logic/base/window.h"

/* dense gets garbage first: merge must zero it itself */
static uint64_t merge(const struct dw_window *w, uint64_t *dense)
{
	memset(dense, 0xa5, DW_HIST_BUCKETS * sizeof(*dense));
	return dw_window_merge(w, dense);
}

static void assert_dense_eq(const uint64_t *got, const uint64_t *want)
{
	unsigned b;

	for (b = 0; b < DW_HIST_BUCKETS; b++)
		if (got[b] != want[b])
			fail_msg("bucket %u: %llu, want %llu", b, (unsigned long long)got[b],
				 (unsigned long long)want[b]);
}

static void test_init_rejects_zero_slots(void **state)
{
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 0), -EINVAL);
	dw_window_free(&w); /* must be safe after a failed init */
}

static void test_empty(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS], zero[DW_HIST_BUCKETS] = {0};
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 4), 0);
	assert_int_equal(merge(&w, dense), 0);
	assert_dense_eq(dense, zero);
	assert_int_equal(dw_window_bytes(&w), 0);
	dw_window_free(&w);
}

static void test_add_and_merge(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS], want[DW_HIST_BUCKETS] = {0};
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 4), 0);
	assert_int_equal(dw_window_add(&w, 3, 5), 0);
	assert_int_equal(dw_window_add(&w, 100, 7), 0);
	assert_int_equal(dw_window_add(&w, DW_HIST_BUCKETS - 1, 1), 0);
	want[3] = 5;
	want[100] = 7;
	want[DW_HIST_BUCKETS - 1] = 1;
	assert_int_equal(merge(&w, dense), 13);
	assert_dense_eq(dense, want);
	dw_window_free(&w);
}

static void test_same_bucket_merges(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 2), 0);
	assert_int_equal(dw_window_add(&w, 10, 1), 0);
	assert_int_equal(dw_window_add(&w, 20, 2), 0);
	assert_int_equal(dw_window_add(&w, 10, 3), 0);
	assert_int_equal(dw_window_add(&w, 10, 4), 0);
	assert_int_equal(dw_window_add(&w, 20, 5), 0);
	assert_int_equal(w.slots[w.cur].npairs, 2);
	assert_int_equal(merge(&w, dense), 15);
	assert_int_equal(dense[10], 8);
	assert_int_equal(dense[20], 7);
	dw_window_free(&w);
}

static void test_bad_bucket(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 2), 0);
	assert_int_equal(dw_window_add(&w, DW_HIST_BUCKETS, 1), -EINVAL);
	assert_int_equal(dw_window_add(&w, UINT_MAX, 1), -EINVAL);
	assert_int_equal(merge(&w, dense), 0);
	dw_window_free(&w);
}

static void test_zero_count_takes_no_room(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;
	unsigned b;

	(void)state;
	assert_int_equal(dw_window_init(&w, 3), 0);
	for (b = 0; b < DW_HIST_BUCKETS; b++)
		assert_int_equal(dw_window_add(&w, b, 0), 0);
	assert_int_equal(w.slots[w.cur].npairs, 0);
	assert_int_equal(dw_window_bytes(&w), 0);
	assert_int_equal(merge(&w, dense), 0);
	dw_window_free(&w);
}

/* With 3 slots, what was added survives 2 advances and is gone after the 3rd. */
static void test_expiry(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 3), 0);
	assert_int_equal(dw_window_add(&w, 1, 1), 0);
	dw_window_advance(&w);
	assert_int_equal(dw_window_add(&w, 2, 10), 0);
	dw_window_advance(&w);
	assert_int_equal(dw_window_add(&w, 3, 100), 0);
	assert_int_equal(merge(&w, dense), 111);
	dw_window_advance(&w);
	assert_int_equal(merge(&w, dense), 110);
	assert_int_equal(dense[1], 0);
	dw_window_advance(&w);
	assert_int_equal(merge(&w, dense), 100);
	dw_window_advance(&w);
	assert_int_equal(merge(&w, dense), 0);
	/* quiet slots hold no pair storage */
	assert_int_equal(dw_window_bytes(&w), 0);
	dw_window_free(&w);
}

static void test_single_slot(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 1), 0);
	assert_int_equal(dw_window_add(&w, 5, 9), 0);
	assert_int_equal(merge(&w, dense), 9);
	dw_window_advance(&w);
	assert_int_equal(merge(&w, dense), 0);
	assert_int_equal(dw_window_add(&w, 6, 2), 0);
	assert_int_equal(merge(&w, dense), 2);
	dw_window_free(&w);
}

/* Every bucket, in a scrambled order: the slot grows to all of them, sorted. */
static void test_all_buckets_any_order(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS], want[DW_HIST_BUCKETS], sum = 0;
	struct dw_window w;
	unsigned i, b;

	(void)state;
	assert_int_equal(dw_window_init(&w, 2), 0);
	for (i = 0; i < DW_HIST_BUCKETS; i++) {
		/* 181 is coprime with 448: a permutation */
		b = (i * 181 + 17) % DW_HIST_BUCKETS;
		want[b] = b + 1;
		sum += b + 1;
		assert_int_equal(dw_window_add(&w, b, b + 1), 0);
	}
	assert_int_equal(w.slots[w.cur].npairs, DW_HIST_BUCKETS);
	for (i = 1; i < w.slots[w.cur].npairs; i++)
		assert_true(w.slots[w.cur].pairs[i - 1].bucket < w.slots[w.cur].pairs[i].bucket);
	assert_int_equal(merge(&w, dense), sum);
	assert_dense_eq(dense, want);
	dw_window_free(&w);
}

/*
 * Random adds and advances against a plain model: a ring of dense arrays.
 * Buckets come from a small set so that merging and expiry both happen a lot.
 */
#define MODEL_SLOTS 5
static void test_against_model(void **state)
{
	static uint64_t model[MODEL_SLOTS][DW_HIST_BUCKETS];
	uint64_t dense[DW_HIST_BUCKETS], want[DW_HIST_BUCKETS], total, seed = 1;
	unsigned cur = 0, round, i, s, b, nadd;
	struct dw_window w;
	uint64_t c;

	(void)state;
	memset(model, 0, sizeof(model));
	assert_int_equal(dw_window_init(&w, MODEL_SLOTS), 0);
	for (round = 0; round < 300; round++) {
		nadd = dwt_rand(&seed) % 40; /* sometimes 0: a quiet interval */
		for (i = 0; i < nadd; i++) {
			b = dwt_rand(&seed) % 3 ? dwt_rand(&seed) % 24 * 19 % DW_HIST_BUCKETS
						: dwt_rand(&seed) % DW_HIST_BUCKETS;
			c = dwt_rand(&seed) % 1000;
			model[cur][b] += c;
			assert_int_equal(dw_window_add(&w, b, c), 0);
		}
		memset(want, 0, sizeof(want));
		total = 0;
		for (s = 0; s < MODEL_SLOTS; s++)
			for (b = 0; b < DW_HIST_BUCKETS; b++) {
				want[b] += model[s][b];
				total += model[s][b];
			}
		assert_int_equal(merge(&w, dense), total);
		assert_dense_eq(dense, want);
		dw_window_advance(&w);
		cur = (cur + 1) % MODEL_SLOTS;
		memset(model[cur], 0, sizeof(model[cur]));
	}
	dw_window_free(&w);
}

static void test_free_twice_and_reinit(void **state)
{
	uint64_t dense[DW_HIST_BUCKETS];
	struct dw_window w;

	(void)state;
	assert_int_equal(dw_window_init(&w, 3), 0);
	assert_int_equal(dw_window_add(&w, 1, 1), 0);
	dw_window_free(&w);
	dw_window_free(&w);
	assert_int_equal(merge(&w, dense), 0);
	assert_int_equal(dw_window_init(&w, 2), 0);
	assert_int_equal(dw_window_add(&w, 2, 2), 0);
	assert_int_equal(merge(&w, dense), 2);
	dw_window_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_rejects_zero_slots),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_add_and_merge),
	    cmocka_unit_test(test_same_bucket_merges),
	    cmocka_unit_test(test_bad_bucket),
	    cmocka_unit_test(test_zero_count_takes_no_room),
	    cmocka_unit_test(test_expiry),
	    cmocka_unit_test(test_single_slot),
	    cmocka_unit_test(test_all_buckets_any_order),
	    cmocka_unit_test(test_against_model),
	    cmocka_unit_test(test_free_twice_and_reinit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
