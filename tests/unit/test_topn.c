// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dwtest.h"

#include "logic/view/topn.h"

#define MAXN 64

/* The keys of items[from..to) in order, as "k,k,k" for readable failures. */
static const char *keys(const struct dw_topn_item *items, size_t from, size_t to)
{
	static char buf[MAXN * 12];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = from; i < to; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%u", i > from ? "," : "", items[i].key);
	return buf;
}

static void check(const struct dw_topn_result *r, size_t kept, size_t folded, size_t lines,
		  bool over)
{
	assert_int_equal(r->kept, kept);
	assert_int_equal(r->folded, folded);
	assert_int_equal(r->lines, lines);
	assert_int_equal(r->over_cap, over);
}

static void test_empty(void **state)
{
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(NULL, 0, 5, &r);
	check(&r, 0, 0, 0, false);
	dw_topn_choose(NULL, 0, 0, &r);
	check(&r, 0, 0, 0, false);
}

static void test_cap_larger_than_items(void **state)
{
	struct dw_topn_item it[] = { { 3, false, 10 }, { 1, false, 30 }, { 2, true, 0 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 3, 10, &r);
	check(&r, 3, 0, 3, false);
	/* pinned first, then by weight */
	assert_string_equal(keys(it, 0, 3), "2,1,3");
}

static void test_cap_equal_to_items(void **state)
{
	struct dw_topn_item it[] = { { 0, false, 1 }, { 1, false, 2 }, { 2, false, 3 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 3, 3, &r);
	check(&r, 3, 0, 3, false);
}

static void test_cap_zero_is_no_cap(void **state)
{
	struct dw_topn_item it[MAXN];
	struct dw_topn_result r;

	(void)state;
	for (unsigned i = 0; i < MAXN; i++)
		it[i] = (struct dw_topn_item){ i, false, i };
	dw_topn_choose(it, MAXN, 0, &r);
	check(&r, MAXN, 0, MAXN, false);
	assert_int_equal(it[0].key, MAXN - 1);
}

/* One line in all: everything goes into ~other. */
static void test_cap_one(void **state)
{
	struct dw_topn_item it[] = { { 0, false, 5 }, { 1, false, 9 } };
	struct dw_topn_item one[] = { { 7, false, 5 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 2, 1, &r);
	check(&r, 0, 2, 1, false);
	assert_string_equal(keys(it, 0, 2), "1,0");
	dw_topn_choose(one, 1, 1, &r);
	check(&r, 1, 0, 1, false);
}

static void test_cap_one_with_a_pinned(void **state)
{
	struct dw_topn_item it[] = { { 0, false, 5 }, { 1, true, 0 }, { 2, false, 9 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 3, 1, &r);
	check(&r, 1, 2, 2, true);
	assert_string_equal(keys(it, 0, 1), "1");
	assert_string_equal(keys(it, 1, 3), "2,0");
}

/* The busiest keep their lines; cap - 1 of them, ~other is the last line. */
static void test_busiest_kept(void **state)
{
	struct dw_topn_item it[] = {
		{ 0, false, 5 }, { 1, false, 50 }, { 2, false, 7 },
		{ 3, false, 0 }, { 4, false, 49 }, { 5, false, 6 },
	};
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 6, 4, &r);
	check(&r, 3, 3, 4, false);
	assert_string_equal(keys(it, 0, 3), "1,4,2");
	assert_string_equal(keys(it, 3, 6), "5,0,3");
}

/* A quiet configured dependency keeps its line; a busy destination is folded instead. */
static void test_pinned_before_busy(void **state)
{
	struct dw_topn_item it[] = {
		{ 0, false, 1000 }, { 1, true, 0 }, { 2, false, 900 }, { 3, true, 1 },
	};
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 4, 3, &r);
	check(&r, 2, 2, 3, false);
	assert_string_equal(keys(it, 0, 2), "3,1");
	assert_string_equal(keys(it, 2, 4), "0,2");
}

/* More pinned than the cap: all are kept, and the result says so. */
static void test_pinned_beyond_cap(void **state)
{
	struct dw_topn_item it[] = {
		{ 0, true, 1 }, { 1, false, 99 }, { 2, true, 2 }, { 3, true, 3 }, { 4, false, 98 },
	};
	struct dw_topn_item all[] = { { 0, true, 1 }, { 1, true, 1 }, { 2, true, 1 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 5, 2, &r);
	check(&r, 3, 2, 4, true);
	assert_string_equal(keys(it, 0, 3), "3,2,0");
	assert_string_equal(keys(it, 3, 5), "1,4");
	/* only pinned: none folded, no ~other, still over */
	dw_topn_choose(all, 3, 2, &r);
	check(&r, 3, 0, 3, true);
}

/* Pinned exactly filling the cap: ~other makes one line too many. */
static void test_pinned_fill_cap(void **state)
{
	struct dw_topn_item it[] = { { 0, true, 1 }, { 1, true, 1 }, { 2, false, 99 } };
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 3, 2, &r);
	check(&r, 2, 1, 3, true);
}

static void test_ties_by_key(void **state)
{
	struct dw_topn_item it[] = {
		{ 9, false, 5 }, { 4, false, 5 }, { 7, false, 5 }, { 1, false, 5 }, { 8, false, 6 },
	};
	struct dw_topn_result r;

	(void)state;
	dw_topn_choose(it, 5, 3, &r);
	check(&r, 2, 3, 3, false);
	assert_string_equal(keys(it, 0, 5), "8,1,4,7,9");
}

/* Equal weights in any input order: the same series kept, call after call. */
static void test_stable_across_calls(void **state)
{
	struct dw_topn_item it[MAXN];
	char first[MAXN * 12];
	uint64_t seed = 42;
	struct dw_topn_result r;

	(void)state;
	for (int round = 0; round < 200; round++) {
		for (unsigned i = 0; i < MAXN; i++)
			it[i] = (struct dw_topn_item){ i, i % 9 == 0, i % 3 ? 10 : 20 };
		/* shuffle (Fisher-Yates) */
		for (size_t i = MAXN - 1; i > 0; i--) {
			size_t j = dwt_rand(&seed) % (i + 1);
			struct dw_topn_item t = it[i];

			it[i] = it[j];
			it[j] = t;
		}
		dw_topn_choose(it, MAXN, 20, &r);
		check(&r, 19, MAXN - 19, 20, false);
		if (!round)
			snprintf(first, sizeof(first), "%s", keys(it, 0, MAXN));
		else
			assert_string_equal(keys(it, 0, MAXN), first);
	}
	/* pinned 0,9,...,63 (8 of them), then weight 20 by key, then weight 10 */
	assert_string_equal(keys(it, 0, 19), "0,9,18,27,36,45,54,63,3,6,12,15,21,24,30,33,39,42,48");
}

struct acc {
	uint32_t keys[MAXN];
	size_t n;
};

static void add_key(void *ctx, uint32_t key)
{
	struct acc *a = ctx;

	a->keys[a->n++] = key;
}

static void test_fold_callback(void **state)
{
	struct dw_topn_item it[] = {
		{ 0, false, 5 }, { 1, false, 50 }, { 2, false, 7 }, { 3, false, 1 },
	};
	struct dw_topn_result r;
	struct acc a = { { 0 }, 0 };

	(void)state;
	dw_topn_choose(it, 4, 2, &r);
	dw_topn_fold(it, &r, add_key, &a);
	assert_int_equal(a.n, 3);
	assert_int_equal(a.keys[0], 2);
	assert_int_equal(a.keys[1], 0);
	assert_int_equal(a.keys[2], 3);
	/* nothing folded: never called */
	a.n = 0;
	dw_topn_choose(it, 4, 0, &r);
	dw_topn_fold(it, &r, add_key, &a);
	assert_int_equal(a.n, 0);
}

static void test_sum_u64(void **state)
{
	/* 4 keys x 3 figures (calls, failed, a histogram bucket) */
	const uint64_t fig[4 * 3] = {
		1, 0, 1,  100, 10, 90,  2, 1, 1,  UINT64_MAX - 1, 5, 0,
	};
	struct dw_topn_item it[] = {
		{ 0, false, 1 }, { 1, false, 100 }, { 2, false, 2 }, { 3, false, 0 },
	};
	struct dw_topn_result r;
	uint64_t sum[3] = { 7, 7, 7 };

	(void)state;
	dw_topn_choose(it, 4, 2, &r); /* keeps 1; folds 2, 0, 3 */
	assert_int_equal(dw_topn_sum_u64(it, &r, fig, 4, 3, sum), 0);
	assert_true(sum[0] == UINT64_MAX); /* saturated, not wrapped */
	assert_int_equal(sum[1], 6);
	assert_int_equal(sum[2], 2);
	/* nothing folded: zeros */
	dw_topn_choose(it, 4, 4, &r);
	assert_int_equal(dw_topn_sum_u64(it, &r, fig, 4, 3, sum), 0);
	assert_true(sum[0] == 0 && sum[1] == 0 && sum[2] == 0);
	/* no figures: nothing touched */
	assert_int_equal(dw_topn_sum_u64(it, &r, NULL, 0, 0, NULL), 0);
}

static void test_sum_skips_unknown_keys(void **state)
{
	const uint64_t fig[2] = { 3, 4 };
	struct dw_topn_item it[] = { { 0, true, 0 }, { 1, false, 9 }, { 99, false, 1 } };
	struct dw_topn_result r;
	uint64_t sum[1];

	(void)state;
	dw_topn_choose(it, 3, 1, &r); /* keeps the pinned 0; folds 1 and 99 */
	assert_int_equal(dw_topn_sum_u64(it, &r, fig, 2, 1, sum), 1);
	assert_int_equal(sum[0], 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_cap_larger_than_items),
		cmocka_unit_test(test_cap_equal_to_items),
		cmocka_unit_test(test_cap_zero_is_no_cap),
		cmocka_unit_test(test_cap_one),
		cmocka_unit_test(test_cap_one_with_a_pinned),
		cmocka_unit_test(test_busiest_kept),
		cmocka_unit_test(test_pinned_before_busy),
		cmocka_unit_test(test_pinned_beyond_cap),
		cmocka_unit_test(test_pinned_fill_cap),
		cmocka_unit_test(test_ties_by_key),
		cmocka_unit_test(test_stable_across_calls),
		cmocka_unit_test(test_fold_callback),
		cmocka_unit_test(test_sum_u64),
		cmocka_unit_test(test_sum_skips_unknown_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
