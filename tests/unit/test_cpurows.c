// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "dwtest.h"

#include <string.h>

#include "logic/kernel/cpurows.h"

#define RING(s) ((s) % DW_SLICES)

static __u64 counter(__u32 slice, __u32 count)
{
	return (__u64)slice << 32 | count;
}

static const struct dw_slice_counts *find(const struct dw_slice_counts *v, unsigned n, __u32 slice)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].slice == slice)
			return &v[i];
	return NULL;
}

static void test_stable(void **state)
{
	__u32 a[2] = { 8, 4 }, b[2] = { 8, 4 };

	(void)state;
	assert_true(dw_cpu_rows_stable(a, b, 2));
	/* a plain update claims and releases the row: BUSY alone never moves a count */
	b[0] = 8 | DW_ROW_BUSY;
	assert_true(dw_cpu_rows_stable(a, b, 2));
	/* a fold in progress at either load */
	b[0] = 8 | DW_ROW_BUSY | DW_ROW_FOLDING;
	assert_false(dw_cpu_rows_stable(a, b, 2));
	assert_false(dw_cpu_rows_stable(b, a, 2));
	/* a fold done in between */
	b[0] = 8 + DW_ROW_GEN;
	assert_false(dw_cpu_rows_stable(a, b, 2));
	/* on another CPU */
	b[0] = 8;
	b[1] = 4 + DW_ROW_GEN;
	assert_false(dw_cpu_rows_stable(a, b, 2));
	/* its counter wraps: still a change */
	a[1] = 0xfffffffc;
	b[1] = 0;
	assert_false(dw_cpu_rows_stable(a, b, 2));
}

/* The record on the current slice adds to the shared counts of that slice. */
static void test_row_on_current_slice(void **state)
{
	struct dw_slice shared[DW_SLICES] = { 0 };
	struct dw_cpu_row rows[2] = { 0 };
	struct dw_slice_counts out[DW_SLICES];
	const struct dw_slice_counts *s;
	unsigned n;

	(void)state;
	shared[RING(1000)] =
		(struct dw_slice){ counter(1000, 5), counter(1000, 2), 0, counter(1000, 1) };
	rows[0] = (struct dw_cpu_row){ .slice = 1000, .started = 3, .fast = 1, .slow = 1 };
	rows[1] = (struct dw_cpu_row){ .slice = 1000, .started = 2 };
	n = dw_slices_merge(shared, rows, 2, out);
	assert_int_equal(n, 1);
	s = find(out, n, 1000);
	assert_non_null(s);
	assert_int_equal(s->started, 10);
	assert_int_equal(s->fast, 3);
	assert_int_equal(s->slow, 1);
	assert_int_equal(s->failed, 1);
}

/* Ends counted in the shared slice while its starts are all still in rows. */
static void test_starts_in_rows_ends_shared(void **state)
{
	struct dw_slice shared[DW_SLICES] = { 0 };
	struct dw_cpu_row rows[2] = { 0 };
	struct dw_slice_counts out[DW_SLICES];
	const struct dw_slice_counts *s;
	unsigned n;

	(void)state;
	/* the position's started counter still holds an older slice */
	shared[RING(1000)] =
		(struct dw_slice){ counter(1000 - DW_SLICES, 9), counter(1000, 4), 0, 0 };
	rows[1] = (struct dw_cpu_row){ .slice = 1000, .started = 6, .fast = 1 };
	n = dw_slices_merge(shared, rows, 2, out);
	assert_int_equal(n, 1);
	s = find(out, n, 1000);
	assert_non_null(s);
	assert_int_equal(s->started, 6);
	assert_int_equal(s->fast, 5);
}

/* A row that sat still while its ring position moved on: stale, ignored; and the reverse. */
static void test_stale_row_and_stale_shared(void **state)
{
	struct dw_slice shared[DW_SLICES] = { 0 };
	struct dw_cpu_row rows[2] = { 0 };
	struct dw_slice_counts out[DW_SLICES];
	const struct dw_slice_counts *s;
	unsigned n;

	(void)state;
	shared[RING(1000)] = (struct dw_slice){ counter(1000 + DW_SLICES, 7), 0, 0, 0 };
	rows[0] = (struct dw_cpu_row){ .slice = 1000, .started = 3, .fast = 3 };
	/* another position: the row is newer than the shared counters there */
	shared[RING(1001)] = (struct dw_slice){ counter(1001, 4), counter(1001, 4), 0, 0 };
	rows[1] = (struct dw_cpu_row){ .slice = 1001 + DW_SLICES, .started = 2 };
	n = dw_slices_merge(shared, rows, 2, out);
	assert_int_equal(n, 2);
	assert_null(find(out, n, 1000));
	assert_null(find(out, n, 1001));
	s = find(out, n, 1000 + DW_SLICES);
	assert_non_null(s);
	assert_int_equal(s->started, 7);
	assert_int_equal(s->fast, 0);
	s = find(out, n, 1001 + DW_SLICES);
	assert_non_null(s);
	assert_int_equal(s->started, 2);
	assert_int_equal(s->fast, 0);
}

/* Slice numbers wrap (u32): 0 is newer than 0xffffff80 at the same position. */
static void test_wrapped_slice_numbers(void **state)
{
	struct dw_slice shared[DW_SLICES] = { 0 };
	struct dw_cpu_row rows[1] = { 0 };
	struct dw_slice_counts out[DW_SLICES];
	const struct dw_slice_counts *s;
	__u32 old = 0xffffff80, young = 0;
	unsigned n;

	(void)state;
	assert_int_equal(RING(old), RING(young));
	shared[RING(old)] = (struct dw_slice){ counter(old, 50), counter(old, 50), 0, 0 };
	rows[0] = (struct dw_cpu_row){ .slice = young, .started = 1 };
	n = dw_slices_merge(shared, rows, 1, out);
	assert_int_equal(n, 1);
	s = find(out, n, young);
	assert_non_null(s);
	assert_int_equal(s->started, 1);
	assert_int_equal(s->fast, 0);
	/* and the other way round: the shared counter is the newer one */
	shared[RING(old)] = (struct dw_slice){ counter(young, 2), 0, 0, 0 };
	rows[0] = (struct dw_cpu_row){ .slice = old, .started = 9 };
	n = dw_slices_merge(shared, rows, 1, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].slice, young);
	assert_int_equal(out[0].started, 2);
}

/* A position whose newest slice counted no start is left out, as the shared counters alone were. */
static void test_no_start_left_out(void **state)
{
	struct dw_slice shared[DW_SLICES] = { 0 };
	struct dw_cpu_row rows[1] = { 0 };
	struct dw_slice_counts out[DW_SLICES];

	(void)state;
	shared[RING(77)] = (struct dw_slice){ 0, counter(77, 3), 0, 0 };
	rows[0] = (struct dw_cpu_row){ .slice = 77, .failed = 1 };
	assert_int_equal(dw_slices_merge(shared, rows, 1, out), 0);
	/* an empty row on a newer slice hides nothing */
	shared[RING(78)] = (struct dw_slice){ counter(78, 3), 0, 0, 0 };
	rows[0] = (struct dw_cpu_row){ .slice = 78 + DW_SLICES };
	assert_int_equal(dw_slices_merge(shared, rows, 1, out), 1);
	assert_int_equal(out[0].slice, 78);
}

static __u32 mkrun(__u32 bucket, __u32 count)
{
	return (bucket + 1) << DW_ROW_RUN_SHIFT | count;
}

static void test_hist_runs(void **state)
{
	__u32 hist[DW_HIST_BUCKETS] = { 0 };
	struct dw_cpu_row rows[2] = { 0 };

	(void)state;
	hist[5] = 0xfffffffe;	/* u32 buckets wrap; readers take deltas */
	rows[0].run[5 % DW_ROW_RUNS] = mkrun(5, 3);
	rows[0].run[447 % DW_ROW_RUNS] = mkrun(447, DW_ROW_RUN_MAX);
	rows[1].run[5 % DW_ROW_RUNS] = mkrun(5, 1);
	rows[1].run[6 % DW_ROW_RUNS] = mkrun(16, 2);
	dw_hist_add_runs(hist, rows, 2);
	assert_int_equal(hist[5], 2);
	assert_int_equal(hist[447], DW_ROW_RUN_MAX);
	assert_int_equal(hist[16], 2);
	assert_int_equal(hist[6], 0);
}

/* One row's runs over the caller histogram's buckets: those beyond it are not counted. */
static void test_runs_of_a_caller_row(void **state)
{
	__u32 hist[DW_CALLER_BUCKETS] = { 0 }, runs[DW_ROW_RUNS] = { 0 };

	(void)state;
	runs[7] = mkrun(127, 4);
	/* out of range: a corrupt run is dropped, not written past the end */
	runs[8] = mkrun(128, 9);
	runs[0] = mkrun(10, 1);
	dw_runs_add(hist, DW_CALLER_BUCKETS, runs);
	assert_int_equal(hist[127], 4);
	assert_int_equal(hist[10], 1);
}

/*
 * A reader's copy while folds happen on the rows: the fold plan says, per
 * copy, which row a fold runs on (done in between, or still in progress
 * at the second load), -1 none.
 */
struct fold_plan {
	struct dw_cpu_row *rows;
	const int *fold_at;		/* per copy: the row folded during it, -1: none */
	bool in_progress;		/* the fold has not ended by the second load */
	unsigned copies;
	__u32 seen;			/* row 0's started as the copy found it */
};

static void copy_during_folds(void *arg)
{
	struct fold_plan *p = arg;
	int k = p->fold_at[p->copies++];

	p->seen = p->rows[0].started;
	if (k < 0)
		return;
	p->rows[k].started += 1;
	p->rows[k].seq = p->in_progress ? p->rows[k].seq | DW_ROW_FOLDING : p->rows[k].seq + DW_ROW_GEN;
}

static void test_read_retries_until_one_moment(void **state)
{
	struct dw_cpu_row rows[3] = { 0 };
	__u32 before[3], after[3];
	static const int folds[] = { 2, 0, -1 };
	struct fold_plan p = { .rows = rows, .fold_at = folds };

	(void)state;
	/* a plain update's BUSY at a load moves no count: no retry for it */
	rows[1].seq = DW_ROW_BUSY;
	assert_true(dw_cpu_rows_read(&rows[0].seq, sizeof(rows[0]), 3, before, after, 64,
				     copy_during_folds, &p));
	assert_int_equal(p.copies, 3);
	assert_int_equal(p.seen, 1);		/* the last copy, after both folds */
	assert_int_equal(after[0], DW_ROW_GEN);
	assert_int_equal(after[2], DW_ROW_GEN);
}

static void test_read_gives_up(void **state)
{
	struct dw_cpu_row rows[2] = { 0 };
	__u32 before[2], after[2];
	static const int folds[] = { 1, 1, 1, 1, 1 };
	struct fold_plan p = { .rows = rows, .fold_at = folds };
	struct fold_plan stuck = { .rows = rows, .fold_at = folds, .in_progress = true };

	(void)state;
	assert_false(dw_cpu_rows_read(&rows[0].seq, sizeof(rows[0]), 2, before, after, 5,
				      copy_during_folds, &p));
	assert_int_equal(p.copies, 5);
	/* a fold that does not end: never a moment */
	rows[1].seq = 0;
	assert_false(dw_cpu_rows_read(&rows[0].seq, sizeof(rows[0]), 2, before, after, 5,
				      copy_during_folds, &stuck));
	assert_int_equal(stuck.copies, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stable),
	    cmocka_unit_test(test_read_retries_until_one_moment),
	    cmocka_unit_test(test_read_gives_up),
	    cmocka_unit_test(test_row_on_current_slice),
	    cmocka_unit_test(test_starts_in_rows_ends_shared),
	    cmocka_unit_test(test_stale_row_and_stale_shared),
	    cmocka_unit_test(test_wrapped_slice_numbers),
	    cmocka_unit_test(test_no_start_left_out),
	    cmocka_unit_test(test_hist_runs),
	    cmocka_unit_test(test_runs_of_a_caller_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
