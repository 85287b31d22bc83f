// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The call model's pure parts, built on the host from the very headers the
 * BPF object is built from (bpf/core/rows.h, bpf/bucket.h, bpf/core/addr.h; the few
 * things they need of their surroundings come from bpf/dwcompat.h): the
 * start-time slice counters, the per-CPU rows' claim, folds and seqcount,
 * the histogram runs, bucket choice and the IPv4-mapped fold. Tracing
 * programs cannot be run with BPF_PROG_RUN, so this is how their logic is
 * tested below the integration suite. The writer's counts are checked
 * against the daemon's own reader (user/logic/kernel/cpurows.c).
 */
#include "dwtest.h"

#include <string.h>

#include "core/addr.h"
#include "core/rows.h"
#include "logic/kernel/cpurows.h"

#define RING(s) ((s) % DW_SLICES)

static __u64 counter(__u32 slice, __u32 count)
{
	return (__u64)slice << 32 | count;
}

static __u32 mkrun(__u32 bucket, __u32 count)
{
	return (bucket + 1) << DW_ROW_RUN_SHIFT | count;
}

static const struct dw_slice_counts *find(const struct dw_slice_counts *v, unsigned n, __u32 slice)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].slice == slice)
			return &v[i];
	return NULL;
}

/* A counter adds within its slice, restarts on a newer one and refuses an older one (late). */
static void test_slice_add(void **state)
{
	__u64 c = 0;

	(void)state;
	assert_int_equal(slice_add(&c, 7, 3), 0);
	assert_true(c == counter(7, 3));
	assert_int_equal(slice_count(&c, 7), 0);
	assert_true(c == counter(7, 4));
	/* the ring position moved on: the old count is dropped, the new slice starts at n */
	assert_int_equal(slice_add(&c, 7 + DW_SLICES, 2), 0);
	assert_true(c == counter(7 + DW_SLICES, 2));
	/* an end of a call that started in the slice the position held before: late */
	assert_int_equal(slice_count(&c, 7), -1);
	assert_true(c == counter(7 + DW_SLICES, 2));
	/* slice numbers wrap (2^32 slices of 67 ms: 9 years): newer is by signed distance */
	c = counter(0xffffffffU, 5);
	assert_int_equal(slice_count(&c, 0xffffffffU + DW_SLICES), 0);
	assert_true(c == counter(DW_SLICES - 1, 1));
}

/* slice_end counts in the start slice's field, and refuses a slot already on a newer slice. */
static void test_slice_end(void **state)
{
	static struct dw_dest_detail d;
	__u64 start = (__u64)1000 << DW_SLICE_SHIFT | 12345;
	struct dw_slice *sl = &d.slices[RING(1000)];

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_ptr_equal(slice_of(&d, start), sl);
	/* the start may still sit in a CPU's row: the shared slot shows an older slice */
	sl->started = counter(1000 - DW_SLICES, 9);
	assert_int_equal(slice_end(&d, start, DW_END_SLOW), 0);
	assert_true(sl->slow == counter(1000, 1));
	assert_int_equal(slice_end(&d, start, DW_END_FAILED), 0);
	assert_true(sl->failed == counter(1000, 1));
	assert_int_equal(slice_end(&d, start, DW_END_FAST), 0);
	assert_true(sl->fast == counter(1000, 1));
	sl->started = counter(1000 + DW_SLICES, 1);
	assert_int_equal(slice_end(&d, start, DW_END_FAST), -1);
	assert_true(sl->fast == counter(1000, 1));
}

/* A fold adds once the counter holds its slice, starts it when older, and drops when newer. */
static void test_fold_add(void **state)
{
	__u64 c = counter(5, 1);

	(void)state;
	fold_add(&c, 5, 4);
	assert_true(c == counter(5, 5));
	fold_add(&c, 5 + DW_SLICES, 2);
	assert_true(c == counter(5 + DW_SLICES, 2));
	fold_add(&c, 5, 100);
	assert_true(c == counter(5 + DW_SLICES, 2));
}

/*
 * The claim: a row is claimed with BUSY; a program that interrupts the
 * holder on the same CPU finds it busy and must count in the shared row; a
 * release leaves the fold count alone, a fold moves it on by one
 * generation with FOLDING clear again.
 */
static void test_seq_claim_release_fold(void **state)
{
	__u32 seq = 3 * DW_ROW_GEN;

	(void)state;
	assert_true(seq_claim(&seq));
	assert_int_equal(seq, 3 * DW_ROW_GEN | DW_ROW_BUSY);
	assert_false(seq_claim(&seq));
	seq_fold_begin(&seq);
	assert_int_equal(seq, 3 * DW_ROW_GEN | DW_ROW_BUSY | DW_ROW_FOLDING);
	seq_fold_end(&seq);
	assert_int_equal(seq, 4 * DW_ROW_GEN | DW_ROW_BUSY);
	seq_release(&seq);
	assert_int_equal(seq, 4 * DW_ROW_GEN);
	assert_true(seq_claim(&seq));
	seq_release(&seq);
	assert_int_equal(seq, 4 * DW_ROW_GEN);
}

/* A reader (the daemon's dw_cpu_rows_stable) sees every fold, and refuses a copy taken inside one. */
static void test_reader_sees_folds(void **state)
{
	static struct dw_dest_detail d;
	struct dw_cpu_row row = { .slice = 40, .started = 3, .fast = 2 };
	__u32 before, during, after;

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_true(seq_claim(&row.seq));
	before = row.seq;
	seq_fold_begin(&row.seq);
	during = row.seq;
	seq_fold_end(&row.seq);
	after = row.seq;
	assert_false(dw_cpu_rows_stable(&before, &during, 1));
	assert_false(dw_cpu_rows_stable(&during, &after, 1));
	assert_false(dw_cpu_rows_stable(&before, &after, 1));
	/* a plain update (claim, count, release) is no fold: a copy around it is good */
	seq_release(&row.seq);
	before = row.seq;
	assert_true(seq_claim(&row.seq));
	row.started++;
	seq_release(&row.seq);
	assert_true(dw_cpu_rows_stable(&before, &row.seq, 1));
}

/*
 * row_at folds a row behind the slice into the shared slice it belongs to
 * and moves it; a row already on a newer slice stays (the call counts in
 * the shared row); the reader's merged view is the same before and after.
 */
static void test_row_move(void **state)
{
	static struct dw_dest_detail d;
	struct dw_cpu_row row = { .slice = 50, .started = 4, .fast = 1, .slow = 2, .failed = 1 };
	struct dw_slice_counts out[DW_SLICES];
	const struct dw_slice_counts *s;
	unsigned n;

	(void)state;
	memset(&d, 0, sizeof(d));
	d.slices[RING(50)].started = counter(50, 6);
	assert_true(seq_claim(&row.seq));
	assert_true(row_at(&row, &d, 50));
	assert_int_equal(row.started, 4);
	assert_true(row_at(&row, &d, 52));
	assert_int_equal(row.slice, 52);
	assert_int_equal(row.started + row.fast + row.slow + row.failed, 0);
	assert_int_equal(row.seq, DW_ROW_GEN | DW_ROW_BUSY);
	assert_false(row_at(&row, &d, 51));
	seq_release(&row.seq);
	assert_true(d.slices[RING(50)].started == counter(50, 10));
	assert_true(d.slices[RING(50)].fast == counter(50, 1));
	assert_true(d.slices[RING(50)].slow == counter(50, 2));
	assert_true(d.slices[RING(50)].failed == counter(50, 1));
	n = dw_slices_merge(d.slices, &row, 1, out);
	s = find(out, n, 50);
	assert_non_null(s);
	assert_int_equal(s->started, 10);
	assert_int_equal(s->slow, 2);
}

/*
 * Histogram runs: a bucket counts in run b % DW_ROW_RUNS; another bucket
 * of the same run flushes it to the shared histogram first (one fold for
 * the reader), and so does a full run.
 */
static void test_runs(void **state)
{
	__u32 hist[DW_HIST_BUCKETS] = { 0 }, runs[DW_ROW_RUNS] = { 0 }, seq = DW_ROW_BUSY;

	(void)state;
	runs_add(&seq, runs, hist, DW_HIST_BUCKETS, 123);
	runs_add(&seq, runs, hist, DW_HIST_BUCKETS, 123);
	assert_int_equal(runs[123 % DW_ROW_RUNS], mkrun(123, 2));
	assert_int_equal(seq, DW_ROW_BUSY);
	runs_add(&seq, runs, hist, DW_HIST_BUCKETS, 123 + DW_ROW_RUNS);
	assert_int_equal(hist[123], 2);
	assert_int_equal(runs[123 % DW_ROW_RUNS], mkrun(123 + DW_ROW_RUNS, 1));
	assert_int_equal(seq, DW_ROW_GEN | DW_ROW_BUSY);
	runs[4] = mkrun(4, DW_ROW_RUN_MAX);
	runs_add(&seq, runs, hist, DW_HIST_BUCKETS, 4);
	assert_int_equal(hist[4], DW_ROW_RUN_MAX);
	assert_int_equal(runs[4], mkrun(4, 1));
	/* out of range: nothing written */
	runs_add(&seq, runs, hist, DW_HIST_BUCKETS, DW_HIST_BUCKETS);
	assert_int_equal(seq, 2 * DW_ROW_GEN | DW_ROW_BUSY);
}

/*
 * Random starts and ends on 2 CPUs' rows, one operation at a time, through
 * the writer's own functions (the path call.bpf.h takes: claim, row_at,
 * count or fall back to the shared row, the histogram's runs, release);
 * after every operation the daemon's merged view must equal the truth, so
 * a fold or a flush never counts twice or goes missing, and no count goes
 * backwards.
 */
struct model {
	struct dw_dest_detail d;
	struct dw_cpu_row rows[2];
	/* truth, by slice (slices stay below 4096) */
	__u64 started[1 << 12], ended[1 << 12];
	__u64 hist_truth[DW_HIST_BUCKETS];
};

static void model_start(struct model *m, struct dw_cpu_row *r, __u32 now)
{
	assert_true(seq_claim(&r->seq));
	if (row_at(r, &m->d, now))
		r->started++;
	else
		slice_count(&m->d.slices[RING(now)].started, now);
	seq_release(&r->seq);
	m->started[now]++;
}

static void model_end(struct model *m, struct dw_cpu_row *r, __u32 start, __u32 b)
{
	__u64 start_ns = (__u64)start << DW_SLICE_SHIFT;

	assert_true(seq_claim(&r->seq));
	if (!row_slice_end(r, &m->d, start, DW_END_FAST))
		assert_int_equal(slice_end(&m->d, start_ns, DW_END_FAST), 0);
	runs_add(&r->seq, r->run, m->d.call, DW_HIST_BUCKETS, b);
	seq_release(&r->seq);
	m->ended[start]++;
	m->hist_truth[b]++;
}

static void model_check(struct model *m, __u32 now, __u64 *prev_hist)
{
	struct dw_slice_counts out[DW_SLICES];
	__u32 h[DW_HIST_BUCKETS];
	unsigned n = dw_slices_merge(m->d.slices, m->rows, 2, out);

	for (unsigned i = 0; i < n; i++) {
		/* every slice of the last DW_SLICES is exact */
		if (out[i].slice + DW_SLICES <= now)
			continue;
		assert_int_equal(out[i].started, m->started[out[i].slice]);
		assert_int_equal(out[i].fast, m->ended[out[i].slice]);
	}
	for (__u32 sl = now >= DW_SLICES ? now - DW_SLICES + 1 : 0; sl <= now; sl++)
		if (m->started[sl])
			assert_non_null(find(out, n, sl));
	memcpy(h, m->d.call, sizeof(h));
	dw_hist_add_runs(h, m->rows, 2);
	for (unsigned b = 0; b < DW_HIST_BUCKETS; b++) {
		assert_int_equal(h[b], m->hist_truth[b]);
		assert_true(h[b] >= prev_hist[b]);
		prev_hist[b] = h[b];
	}
}

static void test_model_folds_and_flushes(void **state)
{
	static struct model m;
	__u64 prev_hist[DW_HIST_BUCKETS] = { 0 };
	uint64_t seed = 17;
	__u32 now = 10;

	(void)state;
	memset(&m, 0, sizeof(m));
	for (int step = 0; step < 200000 && now < 4000; step++) {
		struct dw_cpu_row *r = &m.rows[dwt_rand(&seed) % 2];
		__u32 op = dwt_rand(&seed) % 16;

		if (op == 0) {
			now++;	/* time moves on: a new slice */
		} else if (op < 8) {
			model_start(&m, r, now);
		} else {
			/* an end of a call started up to 3 slices ago, possibly on the other CPU */
			model_end(&m, r, now - dwt_rand(&seed) % 4, 100 + dwt_rand(&seed) % 24);
		}
		model_check(&m, now, prev_hist);
	}
}

/* Bucket choice: each bucket's bounds, and at most 1/16 of its lower bound wide above 1 us. */
static void test_hist_buckets(void **state)
{
	__u32 prev = 0;

	(void)state;
	for (__u64 ns = 0; ns < 1024; ns += 64)
		assert_int_equal(dw_hist_bucket(ns), ns >> DW_HIST_UNIT_SHIFT);
	for (__u64 ns = 1000; ns < (1ULL << 37); ns += ns / 7 + 1) {
		__u32 b = dw_hist_bucket(ns);
		__u64 lo = ns, hi = ns;

		assert_true(b >= prev);
		assert_true(b < DW_HIST_BUCKETS);
		prev = b;
		while (lo > 0 && dw_hist_bucket(lo - 1) == b)
			lo -= lo / 4096 + 1;
		while (dw_hist_bucket(hi + 1) == b && hi - ns < ns)
			hi += hi / 4096 + 1;
		assert_true(hi - lo <= lo / 16 + 2 * (lo / 4096 + 1) + 64);
	}
	assert_int_equal(dw_hist_bucket(~0ULL), DW_HIST_BUCKETS - 1);
	assert_int_equal(dw_log2(1), 0);
	assert_int_equal(dw_log2(0xffffffffffffffffULL), 63);
	assert_int_equal(dw_log2(1ULL << 40), 40);
}

static void v6(struct dw_dest_key *k, __u32 a0, __u32 a1, __u32 a2, __u32 a3)
{
	__u32 a[4] = { htonl(a0), htonl(a1), htonl(a2), htonl(a3) };

	memset(k, 0, sizeof(*k));
	k->family = DW_AF_INET6;
	k->port = 443;
	memcpy(k->addr, a, sizeof(a));
}

/* ::ffff:a.b.c.d is a.b.c.d, the same row as an IPv4 socket's; nothing else changes. */
static void test_fold_v4mapped(void **state)
{
	struct dw_dest_key k, want;

	(void)state;
	v6(&k, 0, 0, 0xffff, 0x0a000301);
	dw_fold_v4mapped(&k);
	memset(&want, 0, sizeof(want));
	want.family = DW_AF_INET;
	want.port = 443;
	want.addr[0] = 10, want.addr[1] = 0, want.addr[2] = 3, want.addr[3] = 1;
	assert_memory_equal(&k, &want, sizeof(k));
	/* ::1, ::a.b.c.d (compatible, not mapped), ::ffff:0:a.b.c.d (translated) stay IPv6 */
	v6(&k, 0, 0, 0, 1);
	want = k;
	dw_fold_v4mapped(&k);
	assert_memory_equal(&k, &want, sizeof(k));
	v6(&k, 0, 0, 0, 0x0a000301);
	want = k;
	dw_fold_v4mapped(&k);
	assert_memory_equal(&k, &want, sizeof(k));
	v6(&k, 0, 0xffff, 0, 0x0a000301);
	want = k;
	dw_fold_v4mapped(&k);
	assert_memory_equal(&k, &want, sizeof(k));
	/* an IPv4 key is left alone, whatever its bytes */
	memset(&k, 0, sizeof(k));
	k.family = DW_AF_INET;
	k.addr[8] = 0xff, k.addr[9] = 0xff;
	want = k;
	dw_fold_v4mapped(&k);
	assert_memory_equal(&k, &want, sizeof(k));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slice_add),
	    cmocka_unit_test(test_slice_end),
	    cmocka_unit_test(test_fold_add),
	    cmocka_unit_test(test_seq_claim_release_fold),
	    cmocka_unit_test(test_reader_sees_folds),
	    cmocka_unit_test(test_row_move),
	    cmocka_unit_test(test_runs),
	    cmocka_unit_test(test_model_folds_and_flushes),
	    cmocka_unit_test(test_hist_buckets),
	    cmocka_unit_test(test_fold_v4mapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
